/**
 * What the HTTP layer learns about a request as it goes, kept on `res.locals` and typed here once (Express's
 * `Locals`, merged), so no handler casts it.
 */

import type { Response } from 'express';
import type { ConsoleSession } from '../auth/console-sessions.js';
import type { Principal } from '../auth/principal.js';
import type { ErrorCode } from '../errors.js';
import type { AuditTarget } from './audit-target.js';

declare global {
  namespace Express {
    interface Locals {
      /** The request's id (X-Request-Id), given when the first response bytes are prepared. */
      requestId?: string;
      /** The route template it matched (`/v1/kv/{namespace}/{key}`): logs name routes, never raw URLs. */
      route?: string;
      /** The audit action of the operation it matched (operation.ts). */
      action?: string;
      /** When the dispatcher took it (performance.now()), for the audit entry's duration. */
      startedAt?: number;
      /** The client address (the socket's, or behind a trusted proxy the forwarded one). */
      client?: string;
      /** Who is calling, once authenticated. */
      principal?: Principal;
      /**
       * The caller as its credential stands now (revoked, expired or its role changed since): what a
       * long-held answer (an event stream) checks again before it sends more; 401 once it no longer holds.
       */
      reauthenticate?: () => Promise<Principal>;
      /** The web console session it came through, when it came with the session cookie. */
      console?: ConsoleSession;
      /** The error code it was answered with, if any. */
      outcomeCode?: ErrorCode;
      /** What it acts on, for its audit entry. */
      audit?: AuditTarget;
      /** A failed authentication counted in a flood summary instead of its own audit line. */
      summarized?: boolean;
      /**
       * Its change's intent is recorded (and, with a required stream, in the stream): from then on its
       * change may be committed, and its answer is what happened (http/request-audit.ts).
       */
      intended?: boolean;
      /** Set by the responder with the first answer: any later one is dropped (respond.ts). */
      answered?: boolean;
    }
  }
}

/** The caller of an authenticated request (the dispatcher's guard ran before any handler that asks). */
export function principalOf(res: Response): Principal {
  const principal = res.locals.principal;
  if (principal === undefined) throw new Error('principalOf: the request was not authenticated');
  return principal;
}

/** The caller's role as audit entries and the console name it: root, a role's name, or scoped. */
export function roleOf(principal: Principal): string {
  return principal.isRoot ? 'root' : (principal.role ?? 'scoped');
}
