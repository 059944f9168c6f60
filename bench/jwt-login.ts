/**
 * JWT logins (docs/identity.md) on the machine of the day, Coffer with all its workers and a local issuer
 * (the tests' JWKS server, in this process):
 * - logins a second (RS256, the key set cached) against token creations a second, alternated for `rounds`
 *   rounds with wrk: each login makes a token, so each costs the same argon2id hash of its secret as a
 *   creation; the target is on the median of the per-round ratios (≥ 0.9);
 * - secret reads (wrk) during a flood of bad JWTs — signed by a key the issuer does not hold, under the
 *   issuer's kid, so each is a whole signature check — fired open loop at 1,000/s over 200 connections,
 *   against the same reads during the control: the reader's correct token at the same rate over the same
 *   connections (the flood bench's control row). Alternated for `rounds` rounds; target on the median ratio
 *   (≥ 0.9).
 *
 *   npm run bench -- --only jwt-login [--seconds 10] [--rounds 5]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestIssuer } from '../test/support/jwt-issuer.js';
import { api } from './api.js';
import * as shape from './cases.js';
import { openLoopProcess } from './open-loop.js';
import { median, type Target, target } from './report.js';
import { startCoffer } from './servers.js';
import { runWrk } from './wrk.js';

export interface JwtLoginRound {
  readonly tokenCreates: number;
  readonly jwtLogins: number;
  readonly readsDuringControl: number;
  readonly readsDuringBadJwts: number;
  /** How the bad JWTs were answered, by status. */
  readonly badJwtAnswers: Record<string, number>;
}

export async function jwtLoginCost(
  root: string,
  options: { seconds: number; rounds: number; connections: number },
): Promise<{ rounds: JwtLoginRound[]; targets: Target[] }> {
  const { seconds, connections } = options;
  const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const issuer = await TestIssuer.start('RS256');
  const stranger = await TestIssuer.start('RS256');
  const server = await startCoffer({
    dataDir: dir,
    rootToken: root,
    workers: availableParallelism(),
    core: null,
  });
  const { url } = server;
  try {
    await api(url, root, 'PUT', '/v1/sys/login-roles/bench', {
      issuer: issuer.url,
      jwks_url: issuer.jwksUrl,
      bound_audiences: ['coffer'],
      role: 'reader',
      ttl: 600,
    });
    await api(url, root, 'PUT', '/v1/kv/bench/app/secret', {
      value: 'p'.repeat(64),
      type: 'secret',
    });
    const reader = String(
      (await api(url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token,
    );
    const claims = {
      ...issuer.kubernetesClaims('bench', 'api'),
      exp: Math.floor(Date.now() / 1000) + 3600,
    };
    const good = { role: 'bench', jwt: await issuer.sign(claims) };
    const bad = JSON.stringify({
      role: 'bench',
      jwt: await stranger.sign({ ...claims, iss: issuer.url }, { kid: issuer.current.kid }),
    });
    const create = shape.post('/v1/auth/token', root, { role: 'reader', expires_in: 600 });
    const loginLua = shape.postPublic('/v1/auth/login/jwt', good);
    const read = shape.get('/v1/kv/bench/app/secret', reader);
    // Warm-up: JIT, the key set fetched by every worker.
    await runWrk({ url, lua: loginLua, connections, seconds: 1 });
    await runWrk({ url, lua: create, connections, seconds: 1 });
    await runWrk({ url, lua: read, connections, seconds: 1 });
    const rounds: JwtLoginRound[] = [];
    for (let r = 0; r < options.rounds; r++) {
      // Which goes first alternates by round, so a drift of the machine favours neither.
      const pair = [create, loginLua].map(
        (lua) => () => runWrk({ url, lua, connections, seconds }),
      );
      const [first, second] = r % 2 === 0 ? pair : [...pair].reverse();
      const [a, b] = [await first!(), await second!()];
      const [tokenCreates, logins] =
        r % 2 === 0 ? [a.requestsPerSecond, b] : [b.requestsPerSecond, a];
      if (logins.failedStatus > 0) throw new Error(`${logins.failedStatus} logins failed`);
      const flood = {
        url,
        perSecond: 1000,
        connections: 200,
        seconds,
        path: '/v1/auth/login/jwt',
        tokenId: '',
      };
      const controlRun = () =>
        Promise.all([
          runWrk({ url, lua: read, connections, seconds }),
          openLoopProcess({ ...flood, path: '/v1/kv/bench/app/secret', token: reader }, 1),
        ]);
      const floodRun = () =>
        Promise.all([
          runWrk({ url, lua: read, connections, seconds }),
          openLoopProcess({ ...flood, body: bad }, 1),
        ]);
      // The control and the flood alternate which goes first too.
      const flooded = r % 2 === 0 ? undefined : await floodRun();
      const [control] = await controlRun();
      const [during, sent] = flooded ?? (await floodRun());
      rounds.push({
        tokenCreates,
        jwtLogins: logins.requestsPerSecond,
        readsDuringControl: control.requestsPerSecond,
        readsDuringBadJwts: during.requestsPerSecond,
        badJwtAnswers: sent.byStatus,
      });
      console.log(`jwt-login round ${r + 1}: ${JSON.stringify(rounds.at(-1))}`);
    }
    return {
      rounds,
      targets: [
        target(
          'JWT logins/s ÷ token creations/s (median of rounds)',
          median(rounds.map((r) => r.jwtLogins / r.tokenCreates)),
          '≥',
          0.9,
        ),
        target(
          'secret reads during a bad-JWT flood ÷ during the control (median of rounds)',
          median(rounds.map((r) => r.readsDuringBadJwts / r.readsDuringControl)),
          '≥',
          0.9,
        ),
      ],
    };
  } finally {
    await server.stop();
    await issuer.close();
    await stranger.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printJwtLogin(rounds: readonly JwtLoginRound[]): void {
  console.log('\nJWT logins (all workers, RS256, key set cached)');
  console.log(
    'round  token creates/s  JWT logins/s  ratio  reads (control)  reads (bad JWTs)  ratio',
  );
  for (const [i, r] of rounds.entries())
    console.log(
      `${String(i + 1).padStart(5)}  ${r.tokenCreates.toFixed(0).padStart(15)}  ${r.jwtLogins.toFixed(0).padStart(12)}  ${(r.jwtLogins / r.tokenCreates).toFixed(2).padStart(5)}  ${r.readsDuringControl.toFixed(0).padStart(15)}  ${r.readsDuringBadJwts.toFixed(0).padStart(16)}  ${(r.readsDuringBadJwts / r.readsDuringControl).toFixed(2).padStart(5)}`,
    );
}
