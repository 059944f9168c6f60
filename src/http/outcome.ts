/**
 * The one place every request's outcome is known: who called, what route, what status and error code,
 * how long it took. The audit log (a later issue) plugs in here; today an optional sink receives each
 * outcome once the response is finished.
 */
import type { NextFunction, Request, Response } from 'express';

export interface RequestOutcome {
  readonly method: string;
  /** The route template (e.g. /v1/auth/token/{token}), never the raw URL, which may hold a token. */
  readonly route: string | null;
  readonly status: number;
  readonly code: string | null;
  readonly principalId: string | null;
  readonly durationMs: number;
}

export type OutcomeSink = (outcome: RequestOutcome) => void;

export function recordOutcomes(sink: OutcomeSink) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = performance.now();
    res.on('finish', () => {
      sink({
        method: req.method,
        route: res.locals.route ?? null,
        status: res.statusCode,
        code: res.locals.outcomeCode ?? null,
        principalId: res.locals.principal?.id ?? null,
        durationMs: performance.now() - started,
      });
    });
    next();
  };
}
