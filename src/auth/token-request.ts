/**
 * What a token request asks for, checked where its JSON schema cannot say: the grant (role or scopes) and
 * the metadata's bounds (METADATA_LIMITS).
 */
import { type FieldIssue, invalid } from '../errors.js';
import { METADATA_LIMITS, type TokenMetadata } from '../model/tokens.js';
import type { Scope } from './access.js';
import { parsePattern } from './patterns.js';
import type { PrincipalFactory } from './principal.js';
import { ROOT_ROLE } from './roles.js';

export interface CreateTokenInput {
  readonly role?: string;
  readonly scopes?: readonly { namespace: string; read?: boolean; write?: boolean }[];
  readonly expires_in?: number;
  readonly metadata?: TokenMetadata;
}

/** The metadata as given, when it is within bounds (METADATA_LIMITS). */
export function checkMetadata(metadata: TokenMetadata): TokenMetadata {
  const entries = Object.entries(metadata);
  const issues: FieldIssue[] = [];
  if (entries.length > METADATA_LIMITS.fields)
    issues.push({
      field: '/metadata',
      in: 'body',
      message: `at most ${METADATA_LIMITS.fields} fields`,
    });
  for (const [field, value] of entries) {
    if (!METADATA_LIMITS.field.test(field))
      issues.push({
        field: `/metadata/${field}`,
        in: 'body',
        message: `field names must match ${METADATA_LIMITS.field.source}`,
      });
    const most = field === 'name' ? METADATA_LIMITS.name : METADATA_LIMITS.value;
    if (typeof value !== 'string' || value.length > most)
      issues.push({
        field: `/metadata/${field}`,
        in: 'body',
        message: `a string of at most ${most} characters`,
      });
  }
  if (Buffer.byteLength(JSON.stringify(metadata)) > METADATA_LIMITS.bytes)
    issues.push({
      field: '/metadata',
      in: 'body',
      message: `at most ${METADATA_LIMITS.bytes} bytes as JSON`,
    });
  if (issues.length > 0) throw invalid('invalid metadata', issues);
  return metadata;
}

/** The role or scopes a request grants, checked (exactly one; a role that exists; patterns that parse). */
export function checkGrant(
  input: CreateTokenInput,
  principals: Pick<PrincipalFactory, 'hasRole'>,
): { role: string | null; scopes: Scope[] | null } {
  if ((input.role === undefined) === (input.scopes === undefined)) {
    throw invalid('exactly one of role and scopes is required', [
      { field: '', in: 'body', message: 'give either role or scopes' },
    ]);
  }
  if (input.role !== undefined) {
    if (input.role === ROOT_ROLE || !principals.hasRole(input.role)) {
      throw invalid(`unknown role "${input.role}"`, [
        { field: '/role', in: 'body', message: 'must name a role that can be given to a token' },
      ]);
    }
    return { role: input.role, scopes: null };
  }
  const issues: FieldIssue[] = [];
  const scopes = input.scopes!.map((s, i) => {
    if (!parsePattern(s.namespace)) {
      issues.push({
        field: `/scopes/${i}/namespace`,
        in: 'body',
        message: 'must be *, a namespace, or a namespace followed by /*',
      });
    }
    const scope = { namespace: s.namespace, read: s.read ?? false, write: s.write ?? false };
    if (!scope.read && !scope.write)
      issues.push({
        field: `/scopes/${i}`,
        in: 'body',
        message: 'must grant read, write or both',
      });
    return scope;
  });
  if (issues.length > 0) throw invalid('invalid scopes', issues);
  return { role: null, scopes };
}
