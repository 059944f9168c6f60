/**
 * The one place errors become answers: RFC 9457 problem+json with a stable `code`, written by the
 * responder (respond.ts). AppErrors carry their own status; errors from Express's body parser are mapped by
 * their `type`; anything else is a 500 whose body says nothing about internals, while the log gets the
 * error (never a request body, whose text a parser error may carry).
 */
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { Responder } from '../api/respond.js';
import { AppError } from '../errors.js';
import { recordInWords } from '../store/record-kinds.js';
import { RecordIntegrityError } from '../store/record-seal.js';
import { StorageUnavailableError } from '../store/store-errors.js';

/** Told of every stored record that failed its check while a request was served (logged and audited). */
export type IntegrityReport = (error: RecordIntegrityError) => void;

const BODY_PARSER_ERRORS: Record<string, () => AppError> = {
  'entity.parse.failed': () =>
    new AppError('invalid_request', 'the request body is not valid JSON'),
  'entity.too.large': () => new AppError('payload_too_large', 'the request body is too large'),
  'encoding.unsupported': () =>
    new AppError('unsupported_media_type', 'the body must be UTF-8 JSON'),
  'charset.unsupported': () =>
    new AppError('unsupported_media_type', 'the body must be UTF-8 JSON'),
  'request.aborted': () =>
    new AppError('invalid_request', 'the request body was not received whole'),
  'request.size.invalid': () =>
    new AppError('invalid_request', 'the request body does not match its Content-Length'),
};

export function toAppError(
  err: unknown,
  log: Logger,
  req: Request,
  report: IntegrityReport = () => undefined,
): AppError {
  if (err instanceof AppError) return err;
  // The one place a stored record that failed its check becomes an answer: 500, never its content.
  if (err instanceof RecordIntegrityError) {
    report(err);
    return new AppError(
      'integrity_error',
      `the stored ${recordInWords(err.kind)} failed its integrity check and was not ${err.kind === 'kv-version' ? 'returned' : 'used'}`,
    );
  }
  if (err instanceof StorageUnavailableError) {
    log.warn(
      { event: 'storage.unavailable', reason: err.message, route: req.res?.locals.route ?? null },
      'storage unavailable: answering 503',
    );
    // A change cut off says whether it was made, as far as the storage could tell.
    const change = req.method !== 'GET' && req.method !== 'HEAD';
    return new AppError(
      'storage_unavailable',
      !change
        ? 'the storage cannot be reached; try again'
        : err.made === 'not'
          ? 'the storage cannot be reached; the change was not made: try again'
          : 'the storage cannot be reached; the change may have been made all the same: read before making it again',
      undefined,
      {
        'Retry-After': '1',
      },
    );
  }
  const parserType = (err as { type?: unknown } | null)?.type;
  if (typeof parserType === 'string' && parserType in BODY_PARSER_ERRORS)
    return BODY_PARSER_ERRORS[parserType]!();
  const e = err instanceof Error ? err : new Error('non-error thrown');
  log.error(
    {
      err: { name: e.name, message: e.message, stack: e.stack },
      method: req.method,
      route: req.res?.locals.route ?? null,
    },
    'request failed',
  );
  return new AppError('internal', 'an internal error occurred');
}

export function problemHandler(log: Logger, respond: Responder, report?: IntegrityReport) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    // Answered already (a request that timed out, whose body reader then fails): the first answer stands.
    if (respond.answered(res)) return;
    const error = toAppError(err, log, req, report);
    if (res.headersSent) return void res.end();
    respond.problem(res, error);
  };
}

export function notFoundHandler(_req: Request, _res: Response, next: NextFunction): void {
  next(new AppError('not_found', 'no such endpoint'));
}
