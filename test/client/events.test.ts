import { createServer } from 'node:net';
import { expect } from 'chai';
import { Coffer, CofferError, type KeyChangeEvent } from '../../src/client/index.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { startCommand } from '../support/process.js';

const FAST = { baseDelayMs: 10, maxDelayMs: 200 };

/** A port nothing listens on now, for a server that must come back on the same address. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

describe("the client's events() and coffer events tail, on the change stream", function () {
  this.timeout(60_000);

  it('follows the namespaces asked for on one connection, and comes back after the server restarts, missing none and repeating none', async () => {
    const port = await freePort();
    let c: TestCoffer = await startTestCoffer({ env: { COFFER_PORT: String(port) } });
    const stop = new AbortController();
    try {
      const coffer = new Coffer({ url: c.url, token: c.rootToken, retry: FAST });
      const got: KeyChangeEvent[] = [];
      // From the first position: nothing written before the stream opened is missed.
      const following = (async () => {
        for await (const event of coffer.events({
          namespaces: ['cl/a', 'cl/b/*'],
          after: 0,
          signal: stop.signal,
        }))
          if (event.kind === 'kv') got.push(event);
      })();
      await c.put('cl/a/k', 'one-value');
      await c.put('cl/b/deep/k', 'two');
      await c.put('cl/elsewhere/k', 'not followed');
      await eventually(() => got.length === 2, { what: 'two events' });
      c = await c.restart();
      await c.put('cl/a/k', 'three');
      await c.call('DELETE', '/v1/kv/cl/b/deep/k');
      await eventually(() => got.length === 4, {
        what: 'two more events after the restart',
        timeout: 20_000,
      });
      stop.abort();
      await following;
      expect(got.map((e) => [e.operation, `${e.namespace}/${e.key}`, e.version])).to.deep.equal([
        ['write', 'cl/a/k', 1],
        ['write', 'cl/b/deep/k', 1],
        ['write', 'cl/a/k', 2],
        ['delete', 'cl/b/deep/k', 1],
      ]);
      for (let i = 1; i < got.length; i++)
        expect(got[i]!.position).to.be.above(got[i - 1]!.position);
      expect(JSON.stringify(got)).to.not.include('one-value');
    } finally {
      stop.abort();
      await c.close();
    }
  });

  it('fails with events_expired when asked to resume past what the server holds, and with 400 for a bad filter', async () => {
    const c = await startTestCoffer();
    try {
      const coffer = new Coffer({ url: c.url, token: c.rootToken, retry: FAST });
      const first = async (options: Parameters<Coffer['events']>[0]) => {
        for await (const _ of coffer.events(options)) return;
      };
      const expired = await first({ after: 1_000_000 }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(expired).to.be.instanceOf(CofferError);
      expect(expired).to.include({ status: 410, code: 'events_expired' });
      const bad = await first({ namespaces: ['a*b'] }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(bad).to.include({ status: 400, code: 'invalid_request' });
    } finally {
      await c.close();
    }
  });

  it('coffer events tail prints each change as it is committed (a line, or JSON) until interrupted, never a value', async () => {
    const c = await startTestCoffer();
    try {
      const env = { COFFER_ADDR: c.url, COFFER_TOKEN: c.rootToken };
      const json = startCommand(
        ['events', 'tail', '--json', '--after', '0', '--namespaces', 'tail/*'],
        env,
      );
      const lines = startCommand(['events', 'tail', '--after', '0', '--kinds', 'delete'], env);
      await c.put('tail/app/db', 'tail-secret-value');
      await c.call('DELETE', '/v1/kv/tail/app/db');
      await eventually(() => json.stdout().split('\n').filter(Boolean).length === 2, {
        what: 'two JSON lines',
      });
      await eventually(() => lines.stdout().includes('delete'), { what: 'the delete line' });
      json.child.kill('SIGINT');
      lines.child.kill('SIGINT');
      const [jsonDone, linesDone] = await Promise.all([json.done, lines.done]);
      expect(jsonDone.code, jsonDone.stderr).to.equal(0);
      expect(linesDone.code, linesDone.stderr).to.equal(0);
      const events = jsonDone.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as KeyChangeEvent);
      expect(events.map((e) => [e.operation, e.namespace, e.key])).to.deep.equal([
        ['write', 'tail/app', 'db'],
        ['delete', 'tail/app', 'db'],
      ]);
      expect(linesDone.stdout).to.match(
        /^\d+ {2}\S+ {2}delete {2}tail\/app\/db {2}v1 {2}secret {2}by root\n$/,
      );
      expect(jsonDone.stdout + linesDone.stdout).to.not.include('tail-secret-value');
      const usage = await startCommand(['events', 'follow'], env).done;
      expect(usage.code).to.equal(2);
    } finally {
      await c.close();
    }
  });
});
