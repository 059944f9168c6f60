/**
 * What a principal may do, as one check used by every endpoint. Roles and legacy scopes both compile to
 * a list of grants; the root token gets one grant covering everything.
 *
 * Invariant: a check that answers "no" never depends on whether a key exists. Callers first ask the
 * namespace-level questions (`mayInNamespace`, `mayBeneath`), and only then look at stored types.
 */

import type { Action, RoleRule } from '../model/policies.js';
import type { Scope } from '../model/tokens.js';
import { VALUE_TYPES, type ValueType } from '../model/value-types.js';
import {
  type NamespacePattern,
  parsePattern,
  patternCovers,
  patternCoversSubtree,
  patternMatches,
  patternReachesInto,
} from './patterns.js';

export interface Grant {
  readonly pattern: NamespacePattern;
  readonly actions: ReadonlySet<Action>;
  readonly types: ReadonlySet<ValueType>;
}

export type { Scope } from '../model/tokens.js';

export interface Capability {
  readonly namespace: string;
  readonly actions: readonly string[];
  readonly types: readonly ValueType[];
}

export class AccessPolicy {
  constructor(private readonly grants: readonly Grant[]) {}

  /** May `action` be done in `ns` on a value of `type`? */
  may(action: Action, ns: string, type: ValueType): boolean {
    return this.grants.some(
      (g) => g.actions.has(action) && g.types.has(type) && patternMatches(g.pattern, ns),
    );
  }

  /** May `action` be done in `ns` on a value of at least one type? */
  mayInNamespace(action: Action, ns: string): boolean {
    return this.grants.some((g) => g.actions.has(action) && patternMatches(g.pattern, ns));
  }

  /** May `action` be done in `ns` or in some namespace beneath it? */
  mayBeneath(action: Action, ns: string): boolean {
    return this.grants.some((g) => g.actions.has(action) && patternReachesInto(g.pattern, ns));
  }

  /** May `action` be done in some namespace, any type? */
  mayAnywhere(action: Action): boolean {
    return this.grants.some((g) => g.actions.has(action));
  }

  /** May `action` be done on every type in `ns` and everywhere beneath it? */
  mayEverywhereBeneath(action: Action, ns: string): boolean {
    return VALUE_TYPES.every((type) =>
      this.grants.some(
        (g) => g.actions.has(action) && g.types.has(type) && patternCoversSubtree(g.pattern, ns),
      ),
    );
  }

  /**
   * Whether everything `other` allows, this allows too: each of its grants lies within one grant of this
   * (namespaces, actions and types). A grant spread over several of this policy's grants is not seen as
   * covered: the check may refuse such a grant, never pass a wider one.
   */
  covers(other: AccessPolicy): boolean {
    return other.grants.every((inner) =>
      this.grants.some(
        (outer) =>
          patternCovers(outer.pattern, inner.pattern) &&
          [...inner.actions].every((a) => outer.actions.has(a)) &&
          [...inner.types].every((t) => outer.types.has(t)),
      ),
    );
  }

  capabilities(): Capability[] {
    return this.grants.map((g) => ({
      namespace: g.pattern.text,
      actions: [...g.actions],
      types: VALUE_TYPES.filter((t) => g.types.has(t)),
    }));
  }
}

/**
 * A delegated token's rights at each use: its own, within every ancestor's as they stand now (the tokens
 * that created it, and theirs). What an ancestor lost — its role narrowed, a scope gone — its descendants
 * lose with it. Each check is the conjunction; `covers` asks it of every part (it may refuse a grant that
 * spreads over several, never pass a wider one), and the capabilities shown are the token's own.
 */
export class BoundedPolicy extends AccessPolicy {
  constructor(
    private readonly own: AccessPolicy,
    private readonly bounds: readonly AccessPolicy[],
  ) {
    super([]);
  }

  override may(action: Action, ns: string, type: ValueType): boolean {
    return this.own.may(action, ns, type) && this.bounds.every((b) => b.may(action, ns, type));
  }

  /** Some one type on which every part allows `action` in `ns`. */
  override mayInNamespace(action: Action, ns: string): boolean {
    return VALUE_TYPES.some((type) => this.may(action, ns, type));
  }

  override mayBeneath(action: Action, ns: string): boolean {
    return this.own.mayBeneath(action, ns) && this.bounds.every((b) => b.mayBeneath(action, ns));
  }

  override mayAnywhere(action: Action): boolean {
    return this.own.mayAnywhere(action) && this.bounds.every((b) => b.mayAnywhere(action));
  }

  override mayEverywhereBeneath(action: Action, ns: string): boolean {
    return (
      this.own.mayEverywhereBeneath(action, ns) &&
      this.bounds.every((b) => b.mayEverywhereBeneath(action, ns))
    );
  }

  override covers(other: AccessPolicy): boolean {
    return this.own.covers(other) && this.bounds.every((b) => b.covers(other));
  }

  override capabilities(): Capability[] {
    return this.own.capabilities();
  }
}

function pattern(text: string): NamespacePattern {
  const parsed = parsePattern(text);
  // Patterns are validated when a role is configured or a token created; reaching this is a bug.
  if (!parsed) throw new Error(`invalid namespace pattern reached the access policy`);
  return parsed;
}

export function policyFromRules(rules: readonly RoleRule[]): AccessPolicy {
  return new AccessPolicy(
    rules.flatMap((rule) =>
      rule.namespaces.map((ns) => ({
        pattern: pattern(ns),
        actions: new Set(rule.actions),
        types: new Set(rule.types),
      })),
    ),
  );
}

export function policyFromScopes(scopes: readonly Scope[]): AccessPolicy {
  return new AccessPolicy(
    scopes.map((s) => {
      const actions = new Set<Action>();
      if (s.read) actions.add('read').add('list');
      if (s.write) actions.add('write').add('delete');
      return { pattern: pattern(s.namespace), actions, types: new Set(VALUE_TYPES) };
    }),
  );
}

export const ROOT_POLICY = policyFromRules([
  { namespaces: ['*'], actions: ['read', 'list', 'write', 'delete'], types: ['config', 'secret'] },
]);
