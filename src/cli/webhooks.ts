/** `coffer webhook …`: signed webhooks for the change events (docs/events.md), through the client. */
import { parseArgs } from 'node:util';
import type { Coffer, WebhookPutRequest } from '../client/index.js';
import { type CommandIo, processIo } from './command-io.js';
import { argumentsError, CliError, EXIT } from './exit-codes.js';
import { printable } from './printable.js';
import { connect, explain } from './session.js';
import { table } from './table.js';

export const WEBHOOK_HELP = `usage: coffer webhook <command> [options]      (root, or a token with manage_webhooks)

  ls [--json]           every webhook: where it goes, what it is sent, how far delivery has got
  show NAME             one webhook, as JSON (never its secret)
  put NAME --url URL [--namespaces PATTERNS] [--kinds OPERATIONS] [--rotate-secret]
                        create or change a webhook: each change event its filters select is POSTed to URL,
                        signed (Standard Webhooks), at least once and in order, from the changes committed
                        after it was made. Prints the signing secret when it is created or rotated — the
                        only time it is shown: give it to the receiver, which checks every message with it.
                        --namespaces 'payments/*,shared' (default all), --kinds write,delete (default all)
  rm NAME               delete a webhook: nothing more is sent to it
  test NAME             send it one signed webhook.test message now; exit 1 unless its receiver took it

examples:
  coffer webhook put deploys --url https://ci.example.com/hooks/coffer --namespaces 'payments/*'
  coffer webhook put deploys --url https://ci.example.com/hooks/coffer --rotate-secret
  coffer webhook test deploys
`;

type Values = Record<string, string | boolean | undefined>;

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;
const list = (text: string | boolean | undefined) =>
  typeof text === 'string' ? text.split(',').filter(Boolean) : undefined;

function oneName(rest: string[], usage: string): string {
  if (rest.length !== 1) throw new CliError(`coffer webhook ${usage}`, EXIT.usage);
  return rest[0]!;
}

async function run(coffer: Coffer, io: CommandIo, command: string, rest: string[], o: Values) {
  switch (command) {
    case 'ls': {
      const { webhooks } = await coffer.listWebhooks();
      io.write(
        o.json
          ? json({ webhooks })
          : `${table(
              ['NAME', 'URL', 'NAMESPACES', 'KINDS', 'DELIVERED', 'BEHIND'],
              webhooks.map((w) => [
                w.name,
                w.url,
                w.namespaces.join(',') || '*',
                w.kinds.join(',') || 'all',
                String(w.delivered),
                String(w.behind),
              ]),
            )}\n`,
      );
      return EXIT.ok;
    }
    case 'show':
      io.write(json(await coffer.getWebhook(oneName(rest, 'show NAME'))));
      return EXIT.ok;
    case 'put': {
      const name = oneName(rest, 'put NAME --url URL [--namespaces …] [--kinds …]');
      if (typeof o.url !== 'string') throw new CliError('webhook put needs --url URL', EXIT.usage);
      const namespaces = list(o.namespaces);
      const kinds = list(o.kinds) as WebhookPutRequest['kinds'];
      const saved = await coffer.putWebhook(name, {
        url: o.url,
        ...(namespaces ? { namespaces } : {}),
        ...(kinds ? { kinds } : {}),
        ...(o['rotate-secret'] ? { rotate_secret: true } : {}),
      });
      if (o.json) io.write(json(saved));
      else {
        io.write(`webhook ${saved.name} saved\n`);
        if (saved.secret)
          io.write(
            `signing secret (shown this once; the receiver verifies each message with it):\n${saved.secret}\n`,
          );
      }
      return EXIT.ok;
    }
    case 'rm': {
      const name = oneName(rest, 'rm NAME');
      await coffer.deleteWebhook(name);
      if (!o.json) io.write(`webhook ${name} removed: nothing more is sent to it\n`);
      return EXIT.ok;
    }
    case 'test': {
      const result = await coffer.testWebhook(oneName(rest, 'test NAME'));
      io.write(
        o.json
          ? json(result)
          : result.delivered
            ? `delivered: the receiver answered ${result.status} in ${result.ms} ms\n`
            : `not delivered: ${printable(result.error ?? 'no answer')}\n`,
      );
      return result.delivered ? EXIT.ok : EXIT.failure;
    }
    default:
      throw new CliError(
        `coffer webhook ${command}: no such command (coffer webhook --help)`,
        EXIT.usage,
      );
  }
}

export async function webhookCommand(args: string[], io: CommandIo = processIo()): Promise<number> {
  let parsed: { positionals: string[]; values: Values };
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        namespaces: { type: 'string' },
        kinds: { type: 'string' },
        'rotate-secret': { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw argumentsError(err);
  }
  const { positionals, values: o } = parsed;
  const [command, ...rest] = positionals;
  if (o.help || command === undefined) {
    io.write(WEBHOOK_HELP);
    return o.help ? EXIT.ok : EXIT.usage;
  }
  const coffer = connect(io.env);
  try {
    return await run(coffer, io, command, rest, o);
  } catch (err) {
    throw explain(err, coffer, `webhook ${rest[0] ?? ''}`.trim());
  }
}
