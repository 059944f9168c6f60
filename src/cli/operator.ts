/**
 * `coffer operator …`: key management against a running server (cli/operator-keyring.ts) and the
 * whole-store operations run offline (cli/operator-store.ts).
 */
import { parseArgs } from 'node:util';
import type { Coffer } from '../client/coffer.js';
import { type CommandIo, linesTo, processIo } from './command-io.js';
import { argumentsError, CliError, EXIT } from './exit-codes.js';
import { COMMAND_HELP, OPERATOR_USAGE } from './operator-help.js';
import { migrate, rewrap, rotate, status } from './operator-keyring.js';
import { migrateStorage, restore, snapshot } from './operator-store.js';
import { connect, explain } from './session.js';
import { noSuchCommand, optionSuggester } from './suggest.js';

export { OPERATOR_USAGE } from './operator-help.js';

/** What `coffer operator` does (a typo is told the nearest). */
const OPERATOR_COMMANDS = [
  'status',
  'rotate',
  'rewrap',
  'migrate-key',
  'snapshot',
  'migrate-storage',
  'restore',
];

export async function operatorCommand(
  args: string[],
  io: CommandIo = processIo(),
): Promise<number> {
  const out = linesTo(io);
  const options = {
    retire: { type: 'boolean', default: false },
    'batch-size': { type: 'string' },
    to: { type: 'string' },
    out: { type: 'string' },
    from: { type: 'string' },
    resume: { type: 'boolean' },
    'accept-unauthenticated': { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  } as const;
  const parse = () => parseArgs({ args, allowPositionals: true, options });
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse();
  } catch (err) {
    throw argumentsError(err, optionSuggester(Object.keys(options)));
  }
  const { positionals, values } = parsed;
  const command = positionals[0];
  if (values.help && command !== undefined && command in COMMAND_HELP) {
    out(COMMAND_HELP[command]!);
    return EXIT.ok;
  }
  if (values.help || command === undefined) {
    out(OPERATOR_USAGE);
    return values.help ? EXIT.ok : EXIT.usage;
  }
  if (command === 'snapshot') {
    if (values.out === undefined) throw new CliError('snapshot needs --out FILE', EXIT.usage);
    await snapshot(values.out, out);
    return EXIT.ok;
  }
  if (command === 'migrate-storage') {
    if (values.to === undefined)
      throw new CliError('migrate-storage needs --to postgres[:URL] or --to lmdb:DIR', EXIT.usage);
    await migrateStorage(values.to, values.resume === true, out);
    return EXIT.ok;
  }
  if (command === 'restore') {
    if (values.from === undefined) throw new CliError('restore needs --from FILE', EXIT.usage);
    await restore(values.from, values['accept-unauthenticated'] === true, out);
    return EXIT.ok;
  }
  const coffer = connect();
  try {
    return await keyringCommand(coffer, command, values, io);
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
  io: CommandIo,
): Promise<number> {
  const out = linesTo(io);
  switch (command) {
    case 'status':
      await status(api, out);
      return EXIT.ok;
    case 'rotate':
      await rotate(api, out);
      return EXIT.ok;
    case 'rewrap': {
      const batch = values['batch-size'];
      if (batch !== undefined && !/^[1-9][0-9]{0,4}$/.test(batch))
        throw new CliError('--batch-size must be a whole number from 1 to 10000', EXIT.usage);
      await rewrap(api, out, {
        ...(batch === undefined ? {} : { batchSize: Number(batch) }),
        retire: values.retire === true,
        tty: io.tty,
      });
      return EXIT.ok;
    }
    case 'migrate-key':
      if (values.to === undefined)
        throw new CliError("migrate-key needs --to FILE (the new provider's settings)", EXIT.usage);
      await migrate(api, out, values.to);
      return EXIT.ok;
    default:
      throw noSuchCommand('operator', command, OPERATOR_COMMANDS);
  }
}
