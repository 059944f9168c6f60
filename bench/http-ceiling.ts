/**
 * The machine's ceiling for a small answer over HTTP from Node: a bare node:http cluster of as many
 * workers as Coffer runs, each answering every request with the same 60-byte body (no routing, no
 * authentication, no audit). `npm run bench:etcd` measures it with the same wrk as Coffer and etcd, so a
 * run says what share of what this machine can answer at all a Coffer read reaches (issue #42).
 *
 *   node dist/bench/http-ceiling.js serve <workers>      prints "listening <url>" once every worker listens
 */
import { type ChildProcess, spawn } from 'node:child_process';
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
const BODY = Buffer.from(`${JSON.stringify({ value: 'p'.repeat(46) })}\n`);

/** Starts the ceiling's cluster as a child process; resolves to its URL and a stop. */
export async function startCeiling(
  workers: number,
): Promise<{ readonly url: string; readonly stop: () => Promise<void> }> {
  const child: ChildProcess = spawn(process.execPath, [SELF, 'serve', String(workers)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /listening (\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the ceiling server exited ${code}`)));
  });
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

if (process.argv[1] === SELF && process.argv[2] === 'serve') {
  const workers = Number(process.argv[3] ?? 1);
  if (cluster.isPrimary) {
    let listening = 0;
    for (let i = 0; i < workers; i++) cluster.fork();
    cluster.on('listening', (_worker, address) => {
      if (++listening === workers)
        process.stdout.write(`listening http://127.0.0.1:${address.port}\n`);
    });
    process.on('SIGTERM', () => {
      for (const worker of Object.values(cluster.workers ?? {})) worker?.kill();
      process.exit(0);
    });
  } else {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': BODY.length });
      res.end(BODY);
    });
    // Every worker of a cluster listening on port 0 shares one port, which the primary chose.
    server.listen(0, '127.0.0.1');
  }
}
