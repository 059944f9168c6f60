/**
 * The web console's files (dist/ui, built by src/build-ui.ts) at /ui/, with a Content-Security-Policy that
 * allows this origin's script, style and API only: no inline script or style, no eval, nothing from
 * elsewhere, no framing, no form sent elsewhere. The files hold no value (values come from the API, whose
 * answers are never cached); they are revalidated on each load so an upgraded server's console is used at once.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import express, { type RequestHandler, Router } from 'express';
import helmet from 'helmet';

export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const UI_DIR = fileURLToPath(new URL('../../ui/', import.meta.url));

export function consoleFiles(tls: boolean): RequestHandler {
  const router = Router({ strict: true });
  router.use(
    helmet({
      contentSecurityPolicy: false,
      crossOriginEmbedderPolicy: false,
      crossOriginResourcePolicy: { policy: 'same-origin' },
      referrerPolicy: { policy: 'no-referrer' },
      strictTransportSecurity: tls,
      xFrameOptions: { action: 'deny' },
    }),
    (_req, res, next) => {
      res.setHeader('Content-Security-Policy', CONSOLE_CSP);
      res.setHeader('Cache-Control', 'no-cache');
      next();
    },
  );
  if (!existsSync(UI_DIR)) {
    router.use((_req, res) => {
      res.status(404).type('text/plain').send('the console is not built here (npm run build)\n');
    });
    return router;
  }
  router.get('/', (req, res, next) => {
    // /ui without its slash: the page's relative addresses need it.
    if (req.originalUrl === '/ui') res.redirect(301, '/ui/');
    else next();
  });
  router.use(express.static(UI_DIR, { index: 'index.html', redirect: false, dotfiles: 'deny' }));
  return router;
}
