import type { ApiConsoleSession } from '../api/response-schemas.js';

/** A live console session as GET /v1/console/session answers it: signed in, every field there. */
export type Session = Required<ApiConsoleSession> & { readonly signed_in: true };
