/**
 * The one place errors become responses: RFC 9457 problem+json with a stable `code`. AppErrors carry
 * their own status; errors from Express's body parser are mapped by their `type`; anything else is a
 * 500 whose body says nothing about internals, while the log gets the error (never a request body,
 * whose text a parser error may carry).
 */
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { AppError, shownDetail } from '../errors.js';
import { StorageUnavailableError } from '../storage/backend.js';
import type { Responder } from './respond.js';

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

export function toAppError(err: unknown, log: Logger, req: Request): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof StorageUnavailableError) {
    log.warn(
      { event: 'storage.unavailable', reason: err.message, route: req.res?.locals.route ?? null },
      'storage unavailable: answering 503',
    );
    return new AppError(
      'storage_unavailable',
      'the storage cannot be reached; try again',
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

/** The problem+json body for `error`: the one place such a body is made. */
export function problemBody(error: AppError): string {
  const body: Record<string, unknown> = {
    ...error.members,
    type: `urn:coffer:problem:${error.code}`,
    title: error.title,
    status: error.status,
    detail: shownDetail(error.code, error.detail),
    code: error.code,
  };
  if (error.issues && error.issues.length > 0) body.errors = error.issues;
  // Every 400 lists what was wrong; where no field was named, the request as a whole.
  else if (error.status === 400)
    body.errors = [{ field: '', in: 'request', message: error.detail }];
  return JSON.stringify(body);
}

export function sendProblem(respond: Responder, res: Response, error: AppError): void {
  respond.raw(
    res,
    error.status,
    'application/problem+json',
    problemBody(error),
    error.headers && Object.entries(error.headers),
  );
}

export function problemHandler(log: Logger, respond: Responder) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const error = toAppError(err, log, req);
    res.locals.outcomeCode = error.code;
    if (res.headersSent) return void res.end();
    sendProblem(respond, res, error);
  };
}

export function notFoundHandler(_req: Request, _res: Response, next: NextFunction): void {
  next(new AppError('not_found', 'no such endpoint'));
}
