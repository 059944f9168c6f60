/**
 * `coffer operator …`: key management against a running server (cli/operator-keyring.ts) and the
 * whole-store operations run offline (cli/operator-store.ts).
 */
import { parseArgs } from 'node:util';
import type { Coffer } from '../client/coffer.js';
import { CliError } from './exit-codes.js';
import { COMMAND_HELP, OPERATOR_USAGE } from './operator-help.js';
import { migrate, rewrap, rotate, status } from './operator-keyring.js';
import { migrateStorage, restore, snapshot } from './operator-store.js';
import type { Out } from './progress.js';
import { connect, explain } from './session.js';

export { OPERATOR_USAGE } from './operator-help.js';

export async function operatorCommand(
  args: string[],
  out: Out = (l) => process.stdout.write(`${l}\n`),
): Promise<number> {
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      retire: { type: 'boolean', default: false },
      'batch-size': { type: 'string' },
      to: { type: 'string' },
      out: { type: 'string' },
      from: { type: 'string' },
      resume: { type: 'boolean' },
      'accept-unauthenticated': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals[0];
  if (values.help && command !== undefined && command in COMMAND_HELP) {
    out(COMMAND_HELP[command]!);
    return 0;
  }
  if (values.help || command === undefined) {
    out(OPERATOR_USAGE);
    return values.help ? 0 : 2;
  }
  if (command === 'snapshot') {
    if (values.out === undefined) throw new CliError('snapshot needs --out FILE', 2);
    await snapshot(values.out, out);
    return 0;
  }
  if (command === 'migrate-storage') {
    if (values.to === undefined)
      throw new CliError('migrate-storage needs --to postgres[:URL] or --to lmdb:DIR', 2);
    await migrateStorage(values.to, values.resume === true, out);
    return 0;
  }
  if (command === 'restore') {
    if (values.from === undefined) throw new CliError('restore needs --from FILE', 2);
    await restore(values.from, values['accept-unauthenticated'] === true, out);
    return 0;
  }
  const coffer = connect();
  try {
    return await keyringCommand(coffer, command, values, out);
  } catch (err) {
    throw explain(err, coffer, `operator ${command}`);
  }
}

async function keyringCommand(
  api: Coffer,
  command: string,
  values: {
    'batch-size'?: string | undefined;
    retire?: boolean | undefined;
    to?: string | undefined;
  },
  out: Out,
): Promise<number> {
  switch (command) {
    case 'status':
      await status(api, out);
      return 0;
    case 'rotate':
      await rotate(api, out);
      return 0;
    case 'rewrap': {
      const batch = values['batch-size'];
      if (batch !== undefined && !/^[1-9][0-9]{0,4}$/.test(batch))
        throw new CliError('--batch-size must be a whole number from 1 to 10000', 2);
      await rewrap(api, out, {
        ...(batch === undefined ? {} : { batchSize: Number(batch) }),
        retire: values.retire === true,
        tty: process.stdout.isTTY === true,
      });
      return 0;
    }
    case 'migrate-key':
      if (values.to === undefined)
        throw new CliError("migrate-key needs --to FILE (the new provider's settings)", 2);
      await migrate(api, out, values.to);
      return 0;
    default:
      out(OPERATOR_USAGE);
      return 2;
  }
}
