/**
 * The webhooks' request and answers (/v1/sys/webhooks: kv/routes/kv-webhooks.ts), declared once for the
 * route, the OpenAPI document and the TypeScript client.
 */
import { type Static, Type } from '@sinclair/typebox';
import { EVENT_KINDS, type EventKindName } from '../model/kv-operations.js';

export const webhookPutSchema = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'http:// or https:// URL the messages are POSTed to; no credentials in it; a loopback, private or reserved address is refused unless COFFER_WEBHOOKS_ALLOW_PRIVATE=true',
    }),
    namespaces: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), {
        maxItems: 32,
        description:
          'namespace patterns as scopes write them (*, payments/*, payments/prod); none or empty: every namespace',
      }),
    ),
    kinds: Type.Optional(
      Type.Array(Type.Unsafe<EventKindName>({ type: 'string', enum: [...EVENT_KINDS] }), {
        uniqueItems: true,
        description:
          "the kinds of event sent: a key's operations, token.revoke, keyring.rotate; none or empty: every change to a key (a revocation or a rotation only when named)",
      }),
    ),
    rotate_secret: Type.Optional(
      Type.Boolean({
        description:
          'draw a new signing secret, shown in this answer only; the old one signs nothing more',
      }),
    ),
  },
  { additionalProperties: false },
);

const view = {
  name: Type.String(),
  url: Type.String(),
  namespaces: Type.Array(Type.String()),
  kinds: Type.Array(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  secret_set_at: Type.String({ format: 'date-time' }),
  delivered: Type.Integer({
    minimum: 0,
    description:
      'the last event position delivered (or passed over by the filters), as stored: at most every second while messages go out',
  }),
  behind: Type.Integer({
    minimum: 0,
    description: 'events in the log after it, those the filters leave out included',
  }),
};
export const webhookView = Type.Object(view, { additionalProperties: false });
export const webhookWithSecret = Type.Object(
  {
    ...view,
    secret: Type.Optional(
      Type.String({
        description:
          'the signing secret (whsec_…), when this answer drew one: created or rotated. Shown only here',
      }),
    ),
  },
  { additionalProperties: false },
);
export const webhookList = Type.Object(
  { webhooks: Type.Array(webhookView) },
  { additionalProperties: false },
);
export const webhookTestResult = Type.Object(
  {
    delivered: Type.Boolean(),
    status: Type.Optional(Type.Integer({ description: "the receiver's answer" })),
    error: Type.Optional(Type.String()),
    ms: Type.Integer({ minimum: 0 }),
    message_id: Type.String({ description: 'the webhook-id the test message carried' }),
  },
  { additionalProperties: false },
);

export type WebhookPutRequest = Static<typeof webhookPutSchema>;
export type ApiWebhook = Static<typeof webhookView>;
export type ApiWebhookWithSecret = Static<typeof webhookWithSecret>;
export type ApiWebhookList = Static<typeof webhookList>;
export type ApiWebhookTest = Static<typeof webhookTestResult>;
