/**
 * What a login role asks of a JWT's claims, and what it takes from them:
 * - a claim is named by a dotted path (`repository`, `kubernetes.io.namespace.name`). Claim names may hold
 *   dots themselves (Kubernetes' `kubernetes.io`): `kubernetes.io.namespace` is
 *   `claims["kubernetes.io"]["namespace"]`; where a path can be read several ways and they disagree, the
 *   JWT is refused (claimAt);
 * - a bound value is exact, or a glob whose `*` matches any run of characters (`refs/heads/*`); a claim
 *   that is a list (groups) matches when one of its items does;
 * - a scope's namespace may take claim values, `apps/{claims.kubernetes.io.namespace}/*`. A value is put in
 *   only when it is one namespace segment (model/names.ts: letters, digits, `.`, `_`, `-`, not `.` or `..`),
 *   so no claim can widen a pattern: `*`, `/`, `..` and the empty string are refused.
 */
import { globMatches } from '../model/glob.js';
import { isSegment } from '../model/names.js';

export type Claims = Readonly<Record<string, unknown>>;

/** A claim path the JWT answers in two ways that disagree: refused (`claim_ambiguous`). */
export class AmbiguousClaim extends Error {
  constructor(readonly path: string) {
    super(`the claim ${path} is read two ways that disagree`);
    this.name = 'AmbiguousClaim';
  }
}

/** How deep a path's readings are followed (a path has at most this many names). */
const MAX_PARTS = 32;

/** Every value the dotted `path` reaches, however its dots are read (as separators, or inside names). */
function readingsOf(at: unknown, parts: readonly string[], from: number, found: unknown[]): void {
  if (from === parts.length) {
    found.push(at);
    return;
  }
  if (typeof at !== 'object' || at === null || Array.isArray(at)) return;
  const object = at as Record<string, unknown>;
  for (let j = from + 1; j <= parts.length; j++) {
    const name = parts.slice(from, j).join('.');
    if (Object.hasOwn(object, name)) readingsOf(object[name], parts, j, found);
  }
}

/**
 * The value at a dotted claim path, or undefined when there is none. Claim names may hold dots
 * (`kubernetes.io`), so a path may be read more than one way: `kubernetes.io.namespace` is
 * `claims["kubernetes.io"]["namespace"]`, or a flat claim by that whole name. A JWT in which two readings
 * give different values is refused (AmbiguousClaim): the issuer's nested claim is never overridden by a flat
 * one someone could add beside it.
 */
export function claimAt(claims: Claims, path: string): unknown {
  const parts = path.split('.');
  if (parts.length > MAX_PARTS) return undefined;
  const found: unknown[] = [];
  readingsOf(claims, parts, 0, found);
  if (found.length === 0) return undefined;
  const first = JSON.stringify(found[0]);
  if (found.some((value) => JSON.stringify(value) !== first)) throw new AmbiguousClaim(path);
  return found[0];
}

/** A claim's value as text, when it is a string, a number or a boolean. */
function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/** Whether the claim at `path` matches one of `accepted` (exact values or globs). */
export function claimMatches(
  claims: Claims,
  path: string,
  accepted: string | readonly string[],
): boolean {
  const patterns = typeof accepted === 'string' ? [accepted] : accepted;
  const value = claimAt(claims, path);
  const items = Array.isArray(value) ? value : [value];
  return items.some((item) => {
    const text = scalarText(item);
    return text !== undefined && patterns.some((p) => globMatches(p, text));
  });
}

const PLACEHOLDER = /\{claims\.([^{}]+)\}/g;

/** The claim paths a template names. */
export function templateClaims(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

/** `template` with each placeholder as a sample segment: what it would be for well-formed claims. */
export function sampleOf(template: string): string {
  return template.replace(PLACEHOLDER, 'x');
}

/** Whether the template has braces that are not placeholders (a typo such as `{claim.sub}`). */
export function hasStrayBraces(template: string): boolean {
  return /[{}]/.test(template.replace(PLACEHOLDER, ''));
}

/**
 * `template` with its placeholders filled from `claims`, or which claim could not be put in: missing, not
 * text, or not one namespace segment (it would widen or break the pattern).
 */
export function fillTemplate(
  template: string,
  claims: Claims,
): { readonly text: string } | { readonly refused: string } {
  let refused: string | undefined;
  const text = template.replace(PLACEHOLDER, (_whole, path: string) => {
    // Text only: a number or a boolean is refused, as identity.md says (`apps/7/*` is not a claim's name).
    const raw = claimAt(claims, path);
    const value = typeof raw === 'string' ? raw : undefined;
    if (value === undefined || !isSegment(value)) refused ??= path;
    return value ?? '';
  });
  return refused === undefined ? { text } : { refused };
}
