/**
 * Coffer as one plain process (no supervisor), with or without its audit log: the pair the benchmark uses
 * to measure what auditing costs on the read path. `node dist/bench/direct-server.js audit|no-audit`,
 * configured by the usual COFFER_* variables. Running without an audit log is possible only through this
 * programmatic option (StartOptions.audit), never through the configuration.
 */
import { pino } from 'pino';
import { startCoffer } from '../src/app.js';
import { loadConfig } from '../src/config/load.js';

const mode = process.argv[2];
if (mode !== 'audit' && mode !== 'no-audit') {
  console.error('usage: direct-server.js audit|no-audit');
  process.exit(2);
}
const config = loadConfig();
const app = await startCoffer(config, { log: pino({ level: 'warn' }), audit: mode === 'audit' });
console.log(`listening ${app.url}`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
