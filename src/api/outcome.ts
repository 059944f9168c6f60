/**
 * Every request's outcome as one record: who called, what route, what status and error code, how long it
 * took. An optional sink (the tests') receives each once the response is finished; the audit log keeps its
 * own entry of the same request (http/request-audit.ts).
 */
import type { Request, Response } from 'express';

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

/** Watches one request: `sink` receives its outcome once its response is finished. */
export function outcomeWatcher(sink: OutcomeSink) {
  return (req: Request, res: Response): void => {
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
  };
}
