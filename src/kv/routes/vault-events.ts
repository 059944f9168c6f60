/**
 * Vault's event subscription: `GET sys/events/subscribe/{type}?json=true` as a WebSocket, each change
 * event the caller may read sent as Vault sends it (vault-events.ts), for the clients that follow Vault's
 * events — the Vault Secrets Operator's instant updates. Served at /vault/v1/sys/events/subscribe/{type},
 * and at /v1/sys/events/subscribe/{type} too: the Operator keeps only the host of its Vault address and
 * asks that path. The token comes in X-Vault-Token (or Authorization), never from a console cookie (a page
 * elsewhere could open a WebSocket with it). Rights are checked before every batch, as on GET /v1/events;
 * a subscription starts with the next change (Vault's has no resuming). Audited as the stream is: its
 * request entry (101) as it opens, `events.stream_closed` when it ends.
 */
import type { Request } from 'express';
import { type WebSocket, WebSocketServer } from 'ws';
import { principalOf } from '../../api/context.js';
import type { Operation } from '../../api/operation.js';
import { flag } from '../../api/query-params.js';
import { rawPath } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import { upgradeOf } from '../../api/upgrades.js';
import { VAULT_ROOT, type VaultMount } from '../../api/vault-dialect.js';
import { AppError, invalid } from '../../errors.js';
import type { EventMessage } from '../event-stream.js';
import type { EventStreams } from '../event-streams.js';
import { eventTypeMatcher, vaultEventMessages } from '../vault-events.js';

/** A subscriber that lets this much wait unsent is cut off. */
const MAX_UNSENT_BYTES = 1024 * 1024;
const TYPE = /^[A-Za-z0-9*_/-]{1,128}$/;
const sockets = new WebSocketServer({ noServer: true, maxPayload: 4096 });

const query = {
  json: flag({
    description: "true: each message is JSON (Vault's other form, protobuf, is not served)",
  }),
};

/** Each event's Vault messages as sent, made once for every subscription that sends them. */
const framed = new WeakMap<EventMessage, { type: string; text: string }[]>();
function vaultFrames(
  message: EventMessage,
  mounts: readonly VaultMount[],
): { type: string; text: string }[] {
  let frames = framed.get(message);
  if (frames === undefined) {
    frames = vaultEventMessages(message, mounts).map((m) => ({
      type: m.data.event_type,
      text: JSON.stringify(m),
    }));
    framed.set(message, frames);
  }
  return frames;
}

/** The {type} of …/sys/events/subscribe/{type}: Vault's event type, `*` matching any run of characters. */
function typeIn(req: Request, prefix: string): string {
  const type = decodeURIComponent(rawPath(req).slice(prefix.length + 1));
  if (!TYPE.test(type))
    throw invalid('the event type is letters, digits, -, _, / and * (kv*, kv-v2/data-*)');
  return type;
}

/** The handshake's headers as RFC 6455 asks, checked before the upgrade is audited and taken. */
function checkHandshake(req: Request): void {
  if (
    upgradeOf(req) === undefined ||
    req.headers.upgrade?.toLowerCase() !== 'websocket' ||
    req.headers['sec-websocket-version'] !== '13' ||
    !/^[+/0-9A-Za-z]{22}==$/.test(req.headers['sec-websocket-key'] ?? '')
  )
    throw invalid('this endpoint is a WebSocket (version 13): connect with Upgrade: websocket');
}

export function vaultEventOperations({
  streams,
  mounts,
  respond,
}: {
  streams: EventStreams;
  mounts: readonly VaultMount[];
  respond: Responder;
}): Operation[] {
  const subscribe = (root: string, operationId: string): Operation<typeof query> => {
    const prefix = `${root}/sys/events/subscribe`;
    return {
      method: 'GET',
      template: `${prefix}/{type}`,
      action: 'events.subscribe',
      dialect: 'vault',
      query,
      docs: [
        {
          operationId,
          summary:
            "Vault's event subscription, as a WebSocket: each change the token may read, of a key under a Vault mount, as Vault's KV v2 events (data.event.metadata: path, data_path, operation, modified, current_version), their type matching {type} (kv*, kv-v2/data-write). json=true only. Starts with the next change",
          pathParams: [
            {
              name: 'type',
              in: 'path',
              required: true,
              schema: { type: 'string', pattern: TYPE.source },
            },
          ],
          responses: { 101: { description: 'Switching to the WebSocket protocol' } },
        },
      ],
      async handler(req, res, input) {
        checkHandshake(req);
        if (input.query.json !== true)
          throw invalid('only JSON messages are sent: ask with json=true');
        if (req.headers.authorization === undefined && req.headers['x-vault-token'] === undefined)
          throw new AppError('unauthorized', 'send the token in X-Vault-Token');
        const selects = eventTypeMatcher(typeIn(req, prefix));
        const caller = principalOf(res);
        const events = streams.open(
          {},
          caller.id,
          res.locals.reauthenticate ?? (async () => caller),
        );
        const start = await events.start(undefined);
        const hold = events.reserve({ token: caller.id, address: res.locals.client ?? '' });
        try {
          const { socket, head } = upgradeOf(req)!;
          let accepted: Promise<WebSocket> | undefined;
          const switched = await respond.switching(res, () => {
            accepted = new Promise((resolve) => sockets.handleUpgrade(req, socket, head, resolve));
          });
          if (!switched || !accepted) return;
          const ws = await accepted;
          const gone = new AbortController();
          ws.on('close', () => gone.abort());
          ws.on('error', () => gone.abort());
          const ended = await streams.follow(
            events,
            start,
            {
              send: (message) => {
                for (const m of vaultFrames(message, mounts)) if (selects(m.type)) ws.send(m.text);
                if (ws.bufferedAmount > MAX_UNSENT_BYTES) ws.terminate();
              },
              heartbeat: () => ws.ping(),
              gone: gone.signal,
            },
            hold,
            { requestId: respond.requestId(res), tokenId: caller.id },
          );
          // 1001: the server goes away; 1008: the token no longer holds; 1011: it cannot go on.
          ws.close(
            ended === 'gone'
              ? 1000
              : ended === 'closed'
                ? 1001
                : ended === 'unauthorized'
                  ? 1008
                  : 1011,
          );
        } finally {
          hold.release();
        }
      },
    };
  };
  return [
    subscribe(VAULT_ROOT, 'vaultSubscribeEvents'),
    subscribe('/v1', 'vaultSubscribeEventsAtRoot'),
  ] as Operation[];
}
