/**
 * `coffer events tail`: every change the token may read, printed as it is committed (GET /v1/events,
 * through the client's events(): it comes back by itself after a disconnect, missing nothing), until
 * interrupted. Never a value: a line names the key, the version and what was done.
 */
import { parseArgs } from 'node:util';
import type { ChangeEvent, EventKind } from '../client/index.js';
import { type CommandIo, processIo } from './command-io.js';
import { argumentsError, CliError, EXIT } from './exit-codes.js';
import { printable } from './printable.js';
import { connect, explain } from './session.js';

export const EVENTS_HELP = `usage: coffer events tail [--namespaces PATTERNS] [--kinds OPERATIONS] [--after POSITION] [--json]

  tail    print every change the token may read as it is committed, one line each, until interrupted
          (Ctrl-C): position, time, operation, namespace/key, version, type and who made it — never a
          value. It comes back by itself after a disconnect or a server restart, missing nothing.

  --namespaces   patterns as scopes write them, comma separated: payments/*,shared (default: all)
  --kinds        kinds, comma separated: write, delete, undelete, destroy, metadata, versions, and
                 token.revoke, keyring.rotate (sent only when named)
  --after        start after this position (a line's first column), not from the next change
  --json         one JSON object a line, as the server sends it

examples:
  coffer events tail --namespaces 'payments/*'
  coffer events tail --kinds write,delete --json | jq -r '.namespace + "/" + .key'
`;

/** One event as a line. */
function lineOf(e: ChangeEvent): string {
  if (e.kind === 'token')
    return `${e.position}  ${e.at}  token revoke  ${e.token_id}${e.revoked.length > 1 ? ` (and ${e.revoked.length - 1} it created)` : ''}  by ${e.actor}\n`;
  if (e.kind === 'keyring')
    return `${e.position}  ${e.at}  keyring rotate  v${e.version}  by ${e.actor}\n`;
  const versions = e.versions ? ` ${e.versions.action} ${e.versions.of.join(',')}` : '';
  return `${e.position}  ${e.at}  ${e.operation}${versions}  ${e.namespace}/${e.key}  v${e.version}  ${e.type}  by ${e.actor}\n`;
}

export async function eventsCommand(args: string[], io: CommandIo = processIo()): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (err) {
    throw argumentsError(err);
  }
  const { positionals, values: o } = parsed;
  if (o.help || positionals[0] === undefined) {
    io.write(EVENTS_HELP);
    return o.help ? EXIT.ok : EXIT.usage;
  }
  if (positionals[0] !== 'tail' || positionals.length > 1)
    throw new CliError(
      `coffer events ${positionals.join(' ')}: no such command (coffer events --help)`,
      EXIT.usage,
    );
  if (o.after !== undefined && !/^\d{1,16}$/.test(o.after))
    throw new CliError(`--after ${o.after}: a position, the first column of a line`, EXIT.usage);
  const list = (text: string | undefined) => text?.split(',').filter(Boolean);
  const coffer = connect(io.env);
  const stop = new AbortController();
  const interrupted = (): void => stop.abort();
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    for await (const event of coffer.events({
      ...(o.namespaces ? { namespaces: list(o.namespaces)! } : {}),
      ...(o.kinds ? { kinds: list(o.kinds)! as EventKind[] } : {}),
      ...(o.after === undefined ? {} : { after: Number(o.after) }),
      signal: stop.signal,
    }))
      io.write(
        o.json ? `${JSON.stringify(event)}\n` : `${printable(lineOf(event).slice(0, -1))}\n`,
      );
    return EXIT.ok;
  } catch (err) {
    throw explain(err, coffer, 'the event stream');
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
}

function parse(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    options: {
      namespaces: { type: 'string' },
      kinds: { type: 'string' },
      after: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}
