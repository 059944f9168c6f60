/**
 * What a login role asks of a JWT's claims, and what it takes from them:
 * - a claim is named by a dotted path (`repository`, `kubernetes.io.namespace.name`). Claim names may hold
 *   dots themselves (Kubernetes' `kubernetes.io`): at each level the longest name that matches is taken, so
 *   `kubernetes.io.namespace` is `claims["kubernetes.io"]["namespace"]`;
 * - a bound value is exact, or a glob whose `*` matches any run of characters (`refs/heads/*`); a claim
 *   that is a list (groups) matches when one of its items does;
 * - a scope's namespace may take claim values, `apps/{claims.kubernetes.io.namespace}/*`. A value is put in
 *   only when it is one namespace segment (model/names.ts: letters, digits, `.`, `_`, `-`, not `.` or `..`),
 *   so no claim can widen a pattern: `*`, `/`, `..` and the empty string are refused.
 */
import { isSegment } from '../model/names.js';

export type Claims = Readonly<Record<string, unknown>>;

/** The value at a dotted claim path, or undefined when there is none. */
export function claimAt(claims: Claims, path: string): unknown {
  const parts = path.split('.');
  let at: unknown = claims;
  let i = 0;
  while (i < parts.length) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    const object = at as Record<string, unknown>;
    let found = false;
    // The longest name first: `kubernetes.io` before `kubernetes`.
    for (let j = parts.length; j > i; j--) {
      const name = parts.slice(i, j).join('.');
      if (Object.hasOwn(object, name)) {
        at = object[name];
        i = j;
        found = true;
        break;
      }
    }
    if (!found) return undefined;
  }
  return at;
}

const globs = new Map<string, RegExp>();

/** Whether `text` matches `pattern`, exact or with `*` for any run of characters. */
export function globMatches(pattern: string, text: string): boolean {
  if (!pattern.includes('*')) return pattern === text;
  let re = globs.get(pattern);
  if (re === undefined) {
    re = new RegExp(
      `^${pattern
        .split('*')
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
      's',
    );
    if (globs.size < 10_000) globs.set(pattern, re);
  }
  return re.test(text);
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
    const value = scalarText(claimAt(claims, path));
    if (value === undefined || !isSegment(value)) refused ??= path;
    return value ?? '';
  });
  return refused === undefined ? { text } : { refused };
}
