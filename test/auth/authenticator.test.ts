import { expect } from 'chai';
import { Argon2Gate, eventLoopBusy } from '../../src/auth/argon2-gate.js';
import { Authenticator } from '../../src/auth/authenticator.js';
import { FailureLimiter } from '../../src/auth/failure-limiter.js';
import { PrincipalFactory } from '../../src/auth/principal.js';
import { roleTable } from '../../src/auth/roles.js';
import type { RootRecord } from '../../src/auth/root-token.js';
import { generateToken } from '../../src/auth/token-format.js';
import { AppError } from '../../src/errors.js';
import type { TokenRecord } from '../../src/model/tokens.js';
import { eventually } from '../support/eventually.js';

/** The real argon2 gate, counting how often it verifies. */
class CountingGate extends Argon2Gate {
  verifications = 0;
  override verify(hash: string, secret: string, key?: string): Promise<boolean> {
    this.verifications++;
    return super.verify(hash, secret, key);
  }
}

/** The authenticator reads the root record through a getter (it follows a new root token). */
const rootOf = (record: RootRecord) => () => record;

describe('authenticator', () => {
  const principals = new PrincipalFactory(roleTable({}));
  const records = new Map<string, TokenRecord>();
  const tokens = { get: async (id: string) => records.get(id) };
  let gate: CountingGate;
  let auth: Authenticator;
  let good: string;
  /** A real token whose correct value is never presented: its wrong secrets always need argon2. */
  let victim: string;
  let root: string;

  before(async () => {
    gate = new CountingGate();
    const t = generateToken();
    good = t.value;
    records.set(t.id, {
      id: t.id,
      hash: await gate.hash(t.secret),
      role: 'reader',
      scopes: null,
      metadata: {},
      createdAt: Date.now(),
      expiresAt: Date.now() + 60_000,
      revokedAt: null,
    });
    const v = generateToken();
    victim = v.value;
    records.set(v.id, { ...records.get(t.id)!, id: v.id, hash: await gate.hash(v.secret) });
    const r = generateToken();
    root = r.value;
    auth = new Authenticator({
      tokens,
      argon2: gate,
      principals,
      root: rootOf({ id: r.id, hash: await gate.hash(r.value), updatedAt: 0 }),
      now: Date.now,
    });
  });

  beforeEach(() => {
    gate.verifications = 0;
  });

  it('runs argon2 once for concurrent first uses of a token, then never again', async () => {
    const fresh = new Authenticator({
      tokens,
      argon2: gate,
      principals,
      root: rootOf({ id: null, hash: 'x', updatedAt: 0 }),
      now: Date.now,
    });
    const principals_ = await Promise.all(
      Array.from({ length: 20 }, () => fresh.authenticate(good)),
    );
    expect(principals_.every((p) => p.role === 'reader')).to.equal(true);
    for (let i = 0; i < 50; i++) await fresh.authenticate(good);
    expect(gate.verifications).to.equal(1);
  });

  it('rejects an unknown id, and a non-token value when the root token has the token shape, without argon2', async () => {
    for (const value of [
      `cfr_${'A'.repeat(16)}_${'a'.repeat(43)}`,
      'not-a-token',
      good.slice(0, -1),
    ]) {
      let error: unknown;
      await auth.authenticate(value).catch((e: unknown) => (error = e));
      expect(error).to.be.instanceOf(AppError).with.property('code', 'unauthorized');
    }
    expect(gate.verifications).to.equal(0);
  });

  it('verifies a wrong secret for a known id once, then rejects it from the cache', async () => {
    const wrong = `${victim.slice(0, 21)}${'w'.repeat(43)}`;
    for (let i = 0; i < 5; i++) await auth.authenticate(wrong).catch(() => undefined);
    expect(gate.verifications).to.equal(1);
  });

  it('authenticates root', async () => {
    expect((await auth.authenticate(root)).isRoot).to.equal(true);
  });

  it('sees a revocation on the next request even when the token is cached', async () => {
    await auth.authenticate(good);
    const id = good.slice(4, 20);
    records.set(id, { ...records.get(id)!, revokedAt: Date.now() });
    let error: unknown;
    await auth.authenticate(good).catch((e: unknown) => (error = e));
    expect(error).to.be.instanceOf(AppError).with.property('status', 401);
    records.set(id, { ...records.get(id)!, revokedAt: null });
  });

  it('turns away argon2 work beyond its queue with 429 instead of piling it up', async () => {
    const small = new Argon2Gate({
      concurrency: 1,
      queueLimit: 2,
      paced: { burst: 100, perSecond: 100 },
    });
    const hash = await small.hash('secret');
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, () => small.verify(hash, 'wrong')),
    );
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).to.have.length(3);
    expect((refused[0] as PromiseRejectedResult).reason)
      .to.be.instanceOf(AppError)
      .with.property('status', 429);
    expect((refused[0] as PromiseRejectedResult).reason.headers).to.deep.equal({
      'Retry-After': '1',
    });
  });

  it('takes turns between tokens: the first verification of another token is not queued behind a flood', async () => {
    const fair = new Argon2Gate({
      concurrency: 1,
      queueLimit: 100,
      perKeyLimit: 50,
      paced: { burst: 100, perSecond: 100 },
    });
    const hash = await fair.hash('secret');
    const order: string[] = [];
    const flood = Array.from({ length: 20 }, () =>
      fair.verify(hash, 'wrong', 'flooded').then(() => order.push('flood')),
    );
    const other = fair
      .verify(hash, 'secret', 'other')
      .then((ok) => order.push(ok ? 'other' : 'other-failed'));
    await Promise.all([...flood, other]);
    // The first flood attempt was running; the other token's turn comes right after it.
    expect(order.indexOf('other')).to.be.at.most(2);
    // One token cannot fill the whole queue.
    const capped = new Argon2Gate({
      concurrency: 1,
      queueLimit: 100,
      perKeyLimit: 3,
      paced: { burst: 100, perSecond: 100 },
    });
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, () => capped.verify(hash, 'wrong', 'one')),
    );
    expect(results.filter((r) => r.status === 'rejected')).to.have.length(2);
    expect(await capped.verify(hash, 'secret', 'two')).to.equal(true);
    // New hashes (token creation) are bounded by the whole queue only, not by the per-token limit.
    const hashes = await Promise.allSettled(Array.from({ length: 8 }, () => capped.hash('s')));
    expect(hashes.every((r) => r.status === 'fulfilled')).to.equal(true);
  });

  it('paces wrong secrets: past its burst a flood gets a few verifications a second, while correct ones never wait for it', async () => {
    const paced = new Argon2Gate({
      concurrency: 2,
      queueLimit: 100,
      perKeyLimit: 50,
      paced: { burst: 2, perSecond: 4 },
    });
    const hash = await paced.hash('secret');
    const started = performance.now();
    const done: string[] = [];
    const flood = Promise.all(
      Array.from({ length: 6 }, () =>
        paced.verify(hash, 'wrong', 'flooded').then(() => done.push('flood')),
      ),
    );
    // A correct secret of another token, sent during the flood, takes its turn next and gives its draw back.
    const other = paced.verify(hash, 'secret', 'other').then((ok) => {
      done.push('other');
      return ok;
    });
    expect(await other).to.equal(true);
    await flood;
    // 2 at once, then 4 more at 4 a second (one of them waiting for the correct one's turn): about a second.
    expect(performance.now() - started).to.be.at.least(700);
    // The turns alternate: after the burst, one paced flood attempt (its queue came first), then the
    // correct one — not behind the three paced attempts left of the flood (index 6). Completion order,
    // not start order, is what can be seen: on a loaded machine the correct one's argon2 run may still be
    // going when the next paced attempt (250 ms later) finishes, hence 4.
    expect(done.indexOf('other')).to.be.at.most(4);
  });

  it('paces wrong secrets more slowly while the process is busy serving', async () => {
    const timeFlood = async (busy: boolean): Promise<number> => {
      const gate_ = new Argon2Gate({
        concurrency: 2,
        queueLimit: 100,
        perKeyLimit: 50,
        paced: { burst: 1, perSecond: 20, busyPerSecond: 2 },
        busy: () => busy,
      });
      const hash = await gate_.hash('secret');
      const started = performance.now();
      await Promise.all(Array.from({ length: 4 }, () => gate_.verify(hash, 'wrong', 'flooded')));
      return performance.now() - started;
    };
    // 1 at once, then 3 more: at 20 a second ~150 ms (plus argon2); at 2 a second ~1.5 s.
    expect(await timeFlood(false)).to.be.below(1000);
    expect(await timeFlood(true)).to.be.at.least(1300);
  });

  it('tells a busy event loop from an idle one', async () => {
    const busy = eventLoopBusy(0.5, 200);
    // Keep this thread's loop busy for ~400 ms: 10 ms of work per turn.
    await new Promise<void>((resolve) => {
      const until = performance.now() + 400;
      const spin = (): void => {
        const turn = performance.now() + 10;
        while (performance.now() < turn);
        if (performance.now() < until) setImmediate(spin);
        else resolve();
      };
      spin();
    });
    expect(busy()).to.equal(true);
    await eventually(() => !busy(), { timeout: 2000, what: 'the loop seen idle again' });
  });

  it('takes turns by client and token: a flood at a token from one address does not refuse its first use from another', async () => {
    const small = new Argon2Gate({
      concurrency: 1,
      queueLimit: 100,
      perKeyLimit: 3,
      paced: { burst: 100, perSecond: 100 },
    });
    const t = generateToken();
    records.set(t.id, {
      ...records.get(good.slice(4, 20))!,
      id: t.id,
      hash: await small.hash(t.secret),
    });
    const shared = new Authenticator({
      tokens,
      argon2: small,
      principals,
      root: rootOf({ id: null, hash: 'x', updatedAt: 0 }),
      now: Date.now,
    });
    const flood = Array.from({ length: 8 }, (_, i) =>
      shared
        .authenticate(`${t.value.slice(0, 21)}${String(i).padStart(43, 'w')}`, '10.9.9.1')
        .catch((e: unknown) => e),
    );
    const owner = await shared.authenticate(t.value, '10.9.9.2').catch((e: unknown) => e);
    const outcomes = await Promise.all(flood);
    // The flooding address filled its own queue (1 running, 3 waiting, the rest refused)…
    expect(outcomes.filter((e) => (e as AppError).code === 'too_many_requests')).to.have.length(4);
    // …and the token's owner, at another address, was verified.
    expect(owner).to.have.property('role', 'reader');
  });

  it('serves a verified token at full speed while wrong tokens flood argon2', async () => {
    await auth.authenticate(good);
    const flood = Array.from({ length: 40 }, (_, i) =>
      auth
        .authenticate(`${victim.slice(0, 21)}${String(i).padStart(43, 'f')}`)
        .catch(() => undefined),
    );
    const started = performance.now();
    for (let i = 0; i < 200; i++) await auth.authenticate(good);
    const elapsed = performance.now() - started;
    await Promise.all(flood);
    // 200 cached checks take microseconds each. Queued behind the flood's argon2 work (40 verifications,
    // two at a time, tens of ms each) they would take seconds; the bound leaves room for a loaded machine.
    expect(elapsed).to.be.below(1000);
  });

  describe('budget of wrong secrets per client address and token', () => {
    let limited: Authenticator;
    let now: number;
    before(() => {
      now = Date.now();
      limited = new Authenticator({
        tokens,
        argon2: gate,
        principals,
        root: rootOf({ id: null, hash: 'x', updatedAt: 0 }),
        now: () => now,
        limiter: new FailureLimiter({ burst: 3, perSecond: 1 }),
      });
    });

    const attempt = (value: string, address: string): Promise<unknown> =>
      limited.authenticate(value, address).catch((e: unknown) => e);
    const wrong = (i: number): string => `${victim.slice(0, 21)}${String(i).padStart(43, 'x')}`;

    it('answers 429 with Retry-After once an address has used its budget, without more argon2', async () => {
      await limited.authenticate(good, '10.0.0.1');
      for (let i = 0; i < 3; i++)
        expect(await attempt(wrong(i), '10.0.0.1')).to.have.property('code', 'unauthorized');
      gate.verifications = 0;
      const refused = await attempt(wrong(99), '10.0.0.1');
      expect(refused).to.be.instanceOf(AppError).with.property('code', 'too_many_requests');
      expect((refused as AppError).headers).to.deep.equal({ 'Retry-After': '1' });
      expect(gate.verifications).to.equal(0);
    });

    it('still serves verified tokens from that address, and other addresses', async () => {
      expect((await limited.authenticate(good, '10.0.0.1')).role).to.equal('reader');
      expect(await attempt(wrong(50), '10.0.0.2')).to.have.property('code', 'unauthorized');
    });

    it("verifies a never-seen token from that address: one token's failures do not limit the others", async () => {
      const t = generateToken();
      records.set(t.id, {
        ...records.get(good.slice(4, 20))!,
        id: t.id,
        hash: await gate.hash(t.secret),
      });
      expect(((await attempt(t.value, '10.0.0.1')) as { role?: string }).role).to.equal('reader');
    });

    it('answers 401, never 429, for failures that cost no argon2, however many', async () => {
      const id = victim.slice(4, 20);
      for (let i = 0; i < 50; i++) {
        expect(
          await attempt(`cfr_${'B'.repeat(16)}_${String(i).padStart(43, 'u')}`, '10.0.0.1'),
        ).to.have.property('code', 'unauthorized');
        expect(await attempt(wrong(0), '10.0.0.1')).to.have.property('code', 'unauthorized'); // refused once already: cached
      }
      records.set(id, { ...records.get(id)!, revokedAt: Date.now() });
      const revoked = await attempt(wrong(77), '10.0.0.1');
      records.set(id, { ...records.get(id)!, revokedAt: null });
      expect(revoked).to.have.property('code', 'unauthorized');
    });

    it('knows a wrong secret of a token it has verified without argon2, and never charges it', async () => {
      await limited.authenticate(good, '10.0.0.5');
      gate.verifications = 0;
      for (let i = 0; i < 50; i++) {
        expect(
          await attempt(`${good.slice(0, 21)}${String(i).padStart(43, 'k')}`, '10.0.0.5'),
        ).to.have.property('code', 'unauthorized');
      }
      expect(gate.verifications).to.equal(0);
      // Nothing was charged: the budget of (10.0.0.5, victim) is untouched, but neither is good's spent.
      expect((await limited.authenticate(good, '10.0.0.5')).role).to.equal('reader');
    });

    it('keeps argon2 and the budget for wrong values of the root token, whose value may be chosen', async () => {
      const r = generateToken();
      const withRoot = new Authenticator({
        tokens,
        argon2: gate,
        principals,
        root: rootOf({ id: r.id, hash: await gate.hash(r.value), updatedAt: 0 }),
        now: () => now,
        limiter: new FailureLimiter({ burst: 2, perSecond: 1 }),
      });
      expect((await withRoot.authenticate(r.value, '10.0.0.6')).isRoot).to.equal(true);
      gate.verifications = 0;
      const outcomes = [];
      for (let i = 0; i < 3; i++)
        outcomes.push(
          await withRoot
            .authenticate(`${r.value.slice(0, 21)}${String(i).padStart(43, 'r')}`, '10.0.0.6')
            .catch((e: unknown) => (e as AppError).code),
        );
      expect(outcomes).to.deep.equal(['unauthorized', 'unauthorized', 'too_many_requests']);
      expect(gate.verifications).to.equal(2);
    });

    it('charges concurrent attempts as they start, so a burst cannot slip past the check', async () => {
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => attempt(wrong(200 + i), '10.0.0.3')),
      );
      expect(results.filter((r) => (r as AppError).code === 'unauthorized')).to.have.length(3);
      expect(results.filter((r) => (r as AppError).code === 'too_many_requests')).to.have.length(5);
    });

    it('does not charge concurrent first uses of one valid token more than once', async () => {
      const t = generateToken();
      records.set(t.id, {
        ...records.get(good.slice(4, 20))!,
        id: t.id,
        hash: await gate.hash(t.secret),
      });
      const results = await Promise.all(
        Array.from({ length: 20 }, () => attempt(t.value, '10.0.0.4')),
      );
      expect(results.every((r) => (r as { role?: string }).role === 'reader')).to.equal(true);
    });

    it('refills the budget over time', async () => {
      now += 2000;
      expect(await attempt(wrong(300), '10.0.0.1')).to.have.property('code', 'unauthorized');
    });
  });
});
