/** The console session as GET /v1/console/session answers it. */
export interface Session {
  readonly signed_in: true;
  readonly csrf: string;
  readonly token_id: string;
  readonly role: string;
  readonly is_root: boolean;
  readonly via: 'token' | 'oidc';
  readonly expires_at: string;
  readonly idle_timeout_seconds: number;
}
