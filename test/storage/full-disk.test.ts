import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { eventually } from '../support/eventually.js';
import { tempDir } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { runCoffer, serveSettings, startProcess, workerPids } from '../support/process.js';

describe('a full disk under the LMDB store', function () {
  this.timeout(120_000);

  it('answers 503 storage_unavailable with Retry-After, keeps its workers, and writes again once there is room; nothing acknowledged is lost', async () => {
    const mount = join(tempDir(), 'data');
    mkdirSync(mount);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mount]);
    } catch {
      throw new Error('this test mounts a 1 MiB tmpfs and needs root (mount -t tmpfs)');
    }
    try {
      // The store fills its volume; the audit log lives elsewhere (as the outside test had it).
      const { root, env } = serveSettings(2, {
        COFFER_DATA_DIR: mount,
        COFFER_AUDIT_DIR: join(tempDir(), 'audit'),
      });
      const p = await startProcess(env);
      /**
       * `request`, and when it goes unanswered, which one it was and what the server wrote to stderr (this
       * test timed out once in CI, "no response within 10 s", and passed every time since: the next one
       * says where).
       */
      const sent = <T>(what: string, request: Promise<T>): Promise<T> =>
        request.catch((err: unknown) => {
          throw new Error(
            `${what}: ${(err as Error).message}\nthe server's stderr, last 4000 characters:\n${p.stderr().slice(-4000)}`,
          );
        });
      const workers = workerPids(p.child.pid!).sort();
      const acknowledged = new Map<string, string>();
      let refused: Awaited<ReturnType<typeof send>> | undefined;
      try {
        for (let i = 0; i < 400 && !refused; i++) {
          const value = `${i}-${'v'.repeat(8000)}`;
          // Two writes at once, so both workers meet the full disk.
          const answers = await Promise.all(
            [0, 1].map((j) =>
              sent(
                `write ${i}-${j} while filling`,
                send(p.url, 'PUT', `/v1/kv/full/k${i}-${j}`, root, { value, type: 'secret' }),
              ),
            ),
          );
          for (const [j, res] of answers.entries()) {
            if (res.status === 201) acknowledged.set(`full/k${i}-${j}`, value);
            else refused ??= res;
          }
        }
        expect(refused, 'the volume filled up').not.to.equal(undefined);
        expect(refused!.status).to.equal(503);
        expect(refused!.body.code).to.equal('storage_unavailable');
        expect(refused!.headers['retry-after']).to.equal('1');
        // Reads go on; the workers that started are the ones serving.
        const [first, value] = [...acknowledged][0]!;
        expect(
          (await sent('a read while full', send(p.url, 'GET', `/v1/kv/${first}`, root))).body.value,
        ).to.equal(value);
        for (let i = 0; i < 6; i++)
          await sent(
            `write more${i} while full`,
            send(p.url, 'PUT', `/v1/kv/full/more${i}`, root, {
              value: 'x'.repeat(8000),
              type: 'secret',
            }),
          );
        expect(workerPids(p.child.pid!).sort()).to.deep.equal(workers);
        expect(p.stderr()).not.to.match(/unhandled|Unhandled/);

        execFileSync('mount', ['-o', 'remount,size=64m', mount]);
        await eventually(
          async () =>
            (
              await sent(
                'a write once there is room',
                send(p.url, 'PUT', '/v1/kv/full/after', root, { value: 'room', type: 'secret' }),
              )
            ).status === 201,
          { interval: 200, what: 'writes accepted again' },
        );
        for (const [key, v] of acknowledged)
          expect(
            (await sent(`the read of ${key}`, send(p.url, 'GET', `/v1/kv/${key}`, root))).body
              .value,
            key,
          ).to.equal(v);
        expect(workerPids(p.child.pid!).sort()).to.deep.equal(workers);
      } finally {
        await p.stop();
      }
      const verify = await runCoffer(['audit', 'verify'], env);
      expect(verify.code, verify.stdout).to.equal(0);
    } finally {
      execFileSync('umount', ['-l', mount]);
    }
  });
});
