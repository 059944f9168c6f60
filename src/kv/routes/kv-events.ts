/**
 * GET /v1/events: the change events a caller may read, as Server-Sent Events (text/event-stream), framed by
 * better-sse's EventBuffer: each event's `id` is its position in the event log, `event: kv`, and `data` its
 * JSON (kv/event-stream.ts: never a value). `Last-Event-ID` (or `?after=`) resumes exactly after a
 * position; a position older than what the log keeps is 410 `events_expired`; without either the stream
 * starts with the next change. `?namespaces=` (patterns as scopes write them: `a/*,b/c`) and `?kinds=`
 * (operations) select. The request's audit entry is written as the stream opens (nothing is sent unless
 * it is); an `events.stream_closed` entry says when it ended, why, and how many events it sent.
 */

import { createEventBuffer } from 'better-sse';
import type { Request } from 'express';
import { principalOf } from '../../api/context.js';
import type { Operation } from '../../api/operation.js';
import { integer, parsed } from '../../api/query-params.js';
import { rawHeader } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import { invalid } from '../../errors.js';
import { EVENT_KINDS, type EventKindName } from '../../model/kv-operations.js';
import type { EventMessage } from '../event-stream.js';
import { type EventStreams, type NamespacePattern, parsePattern } from '../event-streams.js';
import { clientGone } from './kv-waits.js';

const OPERATIONS: readonly EventKindName[] = EVENT_KINDS;
/** The most patterns one stream may name. */
const MAX_PATTERNS = 32;
/** A client that lets this much wait unread is cut off (it resumes with Last-Event-ID). */
const MAX_UNSENT_BYTES = 1024 * 1024;
/** The largest position a client may name. */
const MAX_POSITION = Number.MAX_SAFE_INTEGER;

/** A 400 naming the query parameter at fault. */
function badParameter(field: 'namespaces' | 'kinds', message: string): never {
  throw invalid(`${field} ${message}`, [{ field, in: 'query', message }]);
}

function patterns(text: string): NamespacePattern[] {
  const items = text.split(',');
  if (items.length > MAX_PATTERNS)
    badParameter('namespaces', `names at most ${MAX_PATTERNS} patterns`);
  return items.map((item) => {
    const pattern = parsePattern(item);
    if (!pattern)
      badParameter(
        'namespaces',
        `holds ${JSON.stringify(item)}, which is not a namespace pattern (*, a/*, a/b)`,
      );
    return pattern;
  });
}

function kinds(text: string): EventKindName[] {
  return text.split(',').map((item) => {
    if (!OPERATIONS.includes(item as EventKindName))
      badParameter(
        'kinds',
        `holds ${JSON.stringify(item)}, which is not one of ${OPERATIONS.join(', ')}`,
      );
    return item as EventKindName;
  });
}

const EVENTS_QUERY = {
  after: integer({
    minimum: 0,
    maximum: MAX_POSITION,
    description:
      'resume after this position (an event id): the next event sent is the first after it; as Last-Event-ID, which it must agree with when both are sent',
  }),
  namespaces: parsed({
    pattern: '^[^\\s]{1,4096}$',
    parse: patterns,
    description: `the namespaces whose keys' events are sent: patterns as scopes write them, comma separated (*, payments/*, payments/prod), at most ${MAX_PATTERNS}; default every namespace`,
  }),
  kinds: parsed({
    pattern: '^[a-z.,]{1,128}$',
    parse: kinds,
    description: `the kinds of event sent, comma separated: ${OPERATIONS.join(', ')}; default every change to a key (a token's revocation only when named, to a caller that may list tokens; the keyring's rotation only when named, to one that may read the keyring's status)`,
  }),
};

/** Each message's frame, made once for every stream that sends it (kv/event-stream.ts shares messages). */
const frames = new WeakMap<EventMessage, Buffer>();
function framed(message: EventMessage): Buffer {
  let frame = frames.get(message);
  if (frame === undefined) {
    const framing = createEventBuffer();
    framing.push(message, message.kind, String(message.position));
    // Encoded once, for every stream that sends it.
    frame = Buffer.from(framing.read());
    frames.set(message, frame);
  }
  return frame;
}

/** The position a request resumes after: Last-Event-ID or `after` (both: the same), else none. */
function resumeAfter(req: Request, after: number | undefined): number | undefined {
  const header = rawHeader(req, 'last-event-id');
  if (header === undefined) return after;
  if (!/^[0-9]{1,16}$/.test(header.trim()) || Number(header) > MAX_POSITION)
    throw invalid('Last-Event-ID must be an event id this server sent (its position)', [
      { field: 'Last-Event-ID', in: 'header', message: 'must be a position: digits' },
    ]);
  const position = Number(header);
  if (after !== undefined && after !== position)
    throw invalid('after and Last-Event-ID name different positions');
  return position;
}

export function kvEventOperations({
  streams,
  respond,
}: {
  streams: EventStreams;
  respond: Responder;
}): Operation[] {
  const stream: Operation<typeof EVENTS_QUERY> = {
    method: 'GET',
    template: '/v1/events',
    action: 'events',
    query: EVENTS_QUERY,
    docs: [
      {
        operationId: 'streamEvents',
        summary:
          "The change events the caller may read, as Server-Sent Events: id = the event's position, event = kv, data = {position, kind, operation, namespace, key, version, type, versions?, at, actor} (never a value). Resume with Last-Event-ID or after; 410 events_expired when that position is older than what is kept. A heartbeat comment when quiet. Filtered by the caller's read rights at each delivery; ends when its token no longer holds",
        pathParams: [
          {
            name: 'Last-Event-ID',
            in: 'header',
            required: false,
            description: 'the id of the last event received: the stream resumes after it',
            schema: { type: 'string', pattern: '^[0-9]{1,16}$' },
          },
        ],
        responses: {
          200: {
            description:
              'The stream (text/event-stream), open until the client, the server or the token ends it',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
        },
        errors: [400, 410, 429],
      },
    ],
    async handler(req, res, { query }) {
      const caller = principalOf(res);
      const after = resumeAfter(req, query.after);
      const events = streams.open(
        {
          ...(query.namespaces ? { namespaces: query.namespaces } : {}),
          ...(query.kinds ? { kinds: query.kinds } : {}),
        },
        caller.id,
        res.locals.reauthenticate ?? (async () => caller),
      );
      const start = await events.start(after);
      const hold = events.reserve({ token: caller.id, address: res.locals.client ?? '' });
      try {
        if (!(await respond.stream(res, 'text/event-stream; charset=utf-8'))) return;
        const framing = createEventBuffer();
        const write = (): void => {
          res.write(framing.read());
          framing.clear();
          if (res.writableLength > MAX_UNSENT_BYTES) res.destroy();
        };
        // Tell an EventSource how soon to come back, and where the stream starts: an id with no data moves
        // its last event id without an event, so that coming back before any event resumes from here.
        framing.retry(2000).comment('coffer events').id(String(start)).dispatch();
        write();
        // The storage gone away mid-stream (a PostgreSQL cut): the stream ends, and the client resumes
        // after the last event it got once the storage is back (EventSource does it by itself).
        await streams.follow(
          events,
          start,
          {
            send: (message) => {
              res.write(framed(message));
              if (res.writableLength > MAX_UNSENT_BYTES) res.destroy();
            },
            heartbeat: () => {
              framing.comment('').dispatch();
              write();
            },
            gone: clientGone(res),
          },
          hold,
          { requestId: respond.requestId(res), tokenId: caller.id },
        );
        res.end();
      } finally {
        hold.release();
      }
    },
  };
  return [stream] as Operation[];
}
