import { expect } from 'chai';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { dropTestSchemas, requirePostgres, testSchema } from '../support/postgres.js';
import { pgEnv } from '../support/shared-servers.js';

const DAY = 86_400_000;

describe('tidy: expired tokens and ended console sessions are deleted (COFFER_TOKEN_RETENTION)', function () {
  this.timeout(60_000);

  for (const backend of ['lmdb', 'postgres'] as const)
    describe(`on ${backend}`, () => {
      let c: TestCoffer;
      let offset = 0;

      before(async function () {
        if (backend === 'postgres') await requirePostgres(this);
        c = await startTestCoffer({
          start: { now: () => Date.now() + offset },
          env: {
            COFFER_TOKEN_RETENTION: '1d',
            COFFER_CONSOLE_IDLE_TIMEOUT: '600',
            ...(backend === 'postgres' ? pgEnv(testSchema()) : {}),
          },
        });
      });

      after(async () => {
        await c?.close();
        if (backend === 'postgres') await dropTestSchemas();
      });

      const listed = async (): Promise<string[]> =>
        (await c.call('GET', '/v1/auth/tokens?all=true')).body.tokens.map(
          (t: { id: string }) => t.id,
        );
      const idOf = (token: string): string => token.split('_')[1]!;

      it('deletes a token record its retention after the token expired, and an unused session, once', async () => {
        const shortLived = await c.token({ role: 'reader', expires_in: 60 });
        const longLived = await c.token({ role: 'reader', expires_in: 30 * 86_400 });
        const signIn = await c.call('POST', '/v1/console/sign-in', {
          token: null,
          json: { token: longLived },
        });
        expect(signIn.status).to.equal(201);
        const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;

        // Two days on: the short-lived token expired two days ago (retention: one day), the session idles.
        offset = 2 * DAY;
        const recent = await c.token({ role: 'reader', expires_in: 60 });
        offset = 2 * DAY + 120_000; // `recent` expired a minute ago: kept
        expect(await listed()).to.include.members([idOf(shortLived), idOf(recent)]);
        const done = await c.app.tidy.run();
        expect(done).to.deep.equal({ tokens: 1, console_sessions: 1, events: 0 });
        const after = await listed();
        expect(after).to.not.include(idOf(shortLived));
        expect(after).to.include.members([idOf(longLived), idOf(recent)]);
        // Refused before and after: an expired token is refused whatever its record says.
        expect((await c.call('GET', '/v1/auth/me', { token: shortLived })).status).to.equal(401);
        expect((await c.call('GET', '/v1/auth/me', { token: longLived })).status).to.equal(200);
        const session = await c.call('GET', '/v1/console/session', {
          token: null,
          headers: { cookie },
        });
        expect(session.body.signed_in).to.equal(false);

        // One audit event for the run that deleted something; a run with nothing to do says nothing.
        expect(await c.app.tidy.run()).to.deep.equal({
          tokens: 0,
          console_sessions: 0,
          events: 0,
        });
        const events = await c.call('GET', '/v1/sys/audit?action=store.tidy&limit=100');
        expect(events.status).to.equal(200);
        const tidied = events.body.entries.filter(
          (e: { event?: string }) => e.event === 'store.tidy',
        );
        expect(tidied).to.have.length(1);
        expect(tidied[0]).to.include({ tokens_purged: 1, console_sessions_purged: 1 });
      });
    });
});
