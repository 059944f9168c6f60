import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';

/**
 * Helmet's headers, computed once: helmet runs a single time against a recording response, and every
 * request then gets the same header list. Plus `Cache-Control: no-store`: nothing Coffer says may be
 * cached.
 */
export function securityHeaders(): (req: Request, res: Response, next: NextFunction) => void {
  const recorded: [string, string][] = [];
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]): void {
      recorded.push([name, String(value)]);
    },
    removeHeader(): void {},
  };
  helmet()({} as never, recorder as never, () => undefined);
  recorded.push(['Cache-Control', 'no-store']);
  return (_req, res, next) => {
    for (const [name, value] of recorded) res.setHeader(name, value);
    next();
  };
}
