/**
 * A real rsyslog (Debian's rsyslogd, with rsyslog-gnutls for TLS) receiving an audit stream for the tests:
 * one daemon per receiver, in the foreground, on a loopback port of its own, writing each message it
 * receives — the JSON line, as sent — to one file. Stopped and started again on the same port and file, it
 * plays an outage.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { selfSignedCertificate } from './certificates.js';
import { eventually } from './eventually.js';
import { RSYSLOGD } from './system-packages.js';
import { tempDir } from './temp-dirs.js';

export interface SyslogReceiver {
  readonly port: number;
  /** Where the messages go: one JSON line each. */
  readonly file: string;
  /** The CA file a TLS stream trusts (the receiver's self-signed certificate); TLS receivers only. */
  readonly ca?: string;
  /** The lines received so far. */
  lines(): string[];
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startSyslogReceiver(tls: boolean): Promise<SyslogReceiver> {
  const dir = tempDir();
  const work = join(dir, 'work');
  mkdirSync(work);
  const port = await freePort();
  const file = join(dir, 'audit.log');
  const pem = tls ? selfSignedCertificate(dir) : undefined;
  const config = join(dir, 'rsyslog.conf');
  writeFileSync(
    config,
    [
      `global(workDirectory="${work}" maxMessageSize="64k"${
        pem
          ? ` defaultNetstreamDriverCAFile="${pem.cert}" defaultNetstreamDriverCertFile="${pem.cert}" defaultNetstreamDriverKeyFile="${pem.key}"`
          : ''
      })`,
      pem
        ? 'module(load="imtcp" streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon")'
        : 'module(load="imtcp")',
      'template(name="coffer-audit" type="string" string="%msg%\\n")',
      `input(type="imtcp" address="127.0.0.1" port="${port}" ruleset="coffer")`,
      `ruleset(name="coffer") { action(type="omfile" file="${file}" template="coffer-audit") }`,
      '',
    ].join('\n'),
  );
  let child: ChildProcess | null = null;
  const receiver: SyslogReceiver = {
    port,
    file,
    ...(pem ? { ca: pem.cert } : {}),
    lines: () =>
      existsSync(file)
        ? readFileSync(file, 'utf8')
            .split('\n')
            .filter((line) => line.trim() !== '')
        : [],
    async start() {
      const started = spawn(RSYSLOGD, ['-n', '-f', config, '-i', join(dir, 'rsyslogd.pid')], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let errors = '';
      started.stderr!.on('data', (d: Buffer) => (errors += d.toString()));
      child = started;
      await eventually(
        async () => {
          if (started.exitCode !== null)
            throw new Error(`rsyslogd exited ${started.exitCode}: ${errors.slice(0, 500)}`);
          return listening(port);
        },
        { what: `rsyslogd listening on ${port}`, timeout: 15_000 },
      );
    },
    async stop() {
      const running = child;
      child = null;
      if (!running || running.exitCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      await exited;
    },
  };
  await receiver.start();
  return receiver;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createServer();
    socket.once('error', () => resolve(true));
    socket.listen(port, '127.0.0.1', () => socket.close(() => resolve(false)));
  });
}
