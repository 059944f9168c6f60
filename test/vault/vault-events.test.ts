import { expect } from 'chai';
import { WebSocket } from 'ws';
import type { VaultEventMessage } from '../../src/kv/vault-events.js';
import { auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

/**
 * What the Vault Secrets Operator reads of a message (its eventMsg: data.event.metadata.{path, modified},
 * data.namespace), and how it decides a VaultStaticSecret changed: modified parses as true, the namespace
 * trimmed of / is the secret's, and the path is `{mount}/data/{path}` for KV v2.
 */
interface OperatorView {
  readonly path: string;
  readonly modified: string;
  readonly namespace: string;
}
function operatorMatches(m: OperatorView, spec: { mount: string; path: string }): boolean {
  return (
    ['true', '1', 't', 'TRUE', 'True'].includes(m.modified) &&
    m.namespace.replace(/^\/+|\/+$/g, '') === '' &&
    m.path === `${spec.mount}/data/${spec.path}`
  );
}

interface Subscriber {
  readonly messages: VaultEventMessage[];
  readonly closed: Promise<number>;
  close(): void;
}

/** A WebSocket subscription as the Operator opens one: X-Vault-Token, ?json=true. */
function subscribe(c: TestCoffer, path: string, token = c.rootToken): Promise<Subscriber> {
  const ws = new WebSocket(`${c.url.replace(/^http/, 'ws')}${path}`, {
    headers: { 'X-Vault-Token': token },
  });
  const messages: VaultEventMessage[] = [];
  ws.on('message', (data) => messages.push(JSON.parse(String(data)) as VaultEventMessage));
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ messages, closed, close: () => ws.close() }));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`refused: ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

describe("Vault's event subscription (sys/events/subscribe, WebSocket)", function () {
  this.timeout(30_000);
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer({ env: { COFFER_VAULT_MOUNTS: 'secret,apps=teams/apps:config' } });
  });
  after(async () => {
    await c?.close();
  });

  it("sends each change as Vault's KV v2 event, which the Vault Secrets Operator matches to its secret", async () => {
    // The Operator asks /v1/sys/events/subscribe/kv* on its Vault address's host.
    const s = await subscribe(c, '/v1/sys/events/subscribe/kv*?json=true');
    const put = await c.call('POST', '/vault/v1/secret/data/app/db', {
      headers: { 'x-vault-token': c.rootToken },
      json: { data: { password: 'vso-secret-value' } },
    });
    expect(put.status).to.equal(200);
    await c.put('teams/apps/web/url', 'https://example.com', 'config');
    await c.call('DELETE', '/v1/kv/app/db');
    await eventually(() => s.messages.length >= 4);
    s.close();
    const views = s.messages.map((m) => ({
      path: m.data.event.metadata.path!,
      modified: m.data.event.metadata.modified!,
      namespace: m.data.namespace,
      type: m.data.event_type,
    }));
    // The write through Vault, seen under the top-level mount; the config key, under both mounts it lies
    // under; the delete, Vault's soft delete of the latest.
    expect(views.map((v) => [v.type, v.path])).to.deep.equal([
      ['kv-v2/data-write', 'secret/data/app/db'],
      ['kv-v2/data-write', 'secret/data/teams/apps/web/url'],
      ['kv-v2/data-write', 'apps/data/web/url'],
      ['kv-v2/data-delete', 'secret/data/app/db'],
    ]);
    expect(operatorMatches(views[0]!, { mount: 'secret', path: 'app/db' })).to.equal(true);
    expect(operatorMatches(views[2]!, { mount: 'apps', path: 'web/url' })).to.equal(true);
    expect(operatorMatches(views[0]!, { mount: 'secret', path: 'app/other' })).to.equal(false);
    const first = s.messages[0]!;
    expect(first).to.include({ specversion: '1.0', datacontentype: 'application/cloudevents' });
    expect(first.data.event.metadata).to.include({
      operation: 'data-write',
      data_path: 'secret/data/app/db',
      current_version: '1',
    });
    expect(first.data.plugin_info).to.include({ mount_path: 'secret/', plugin: 'kv' });
    expect(JSON.stringify(s.messages)).to.not.include('vso-secret-value');
    expect(await s.closed).to.equal(1005);
    await eventually(() =>
      auditLines(c.config.audit.dir!).some(
        (l) => l.event === 'events.stream_closed' && l.ended === 'gone' && l.delivered === 3,
      ),
    );
    const opened = auditLines(c.config.audit.dir!).filter(
      (l) => l.kind === 'request' && l.action === 'events.subscribe',
    );
    expect(opened.map((l) => (l.outcome as { status: number }).status)).to.include(101);
  });

  it('selects by event type, and sends a token only what it may read', async () => {
    const configReader = String(
      (await c.call('POST', '/v1/auth/token', { json: { role: 'config-reader' } })).body.token,
    );
    const writesOnly = await subscribe(
      c,
      '/vault/v1/sys/events/subscribe/kv-v2/data-write?json=true',
    );
    const limited = await subscribe(c, '/v1/sys/events/subscribe/*?json=true', configReader);
    await c.put('sel/secret-key', 's', 'secret');
    await c.put('sel/config-key', 'c', 'config');
    await c.call('PATCH', '/v1/kv/sel/config-key', { json: { custom_metadata: { a: 'b' } } });
    await eventually(() => writesOnly.messages.length >= 2 && limited.messages.length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    writesOnly.close();
    limited.close();
    expect(writesOnly.messages.map((m) => m.data.event.metadata.path)).to.deep.equal([
      'secret/data/sel/secret-key',
      'secret/data/sel/config-key',
    ]);
    expect(
      limited.messages.map((m) => [m.data.event_type, m.data.event.metadata.path]),
    ).to.deep.equal([
      ['kv-v2/data-write', 'secret/data/sel/config-key'],
      ['kv-v2/metadata-write', 'secret/metadata/sel/config-key'],
    ]);
  });

  it("a subscription's pattern of the largest allowed size never holds the worker: reads go on while events are matched", async () => {
    // A config-reader's token is enough to subscribe. Each `*` was compiled to `.*` of one regular
    // expression: 2.4–3.3 s an event at 14 stars, doubling with each more star.
    const configReader = await c.token({ role: 'config-reader' });
    const pattern = `${'*'.repeat(127)}Z`;
    const s = await subscribe(
      c,
      `/vault/v1/sys/events/subscribe/${pattern}?json=true`,
      configReader,
    );
    try {
      const slowest: number[] = [];
      for (let i = 0; i < 5; i++) {
        await c.put(`storm/k${i}`, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'config');
        const started = performance.now();
        expect((await c.call('GET', `/v1/kv/storm/k${i}`)).status).to.equal(200);
        slowest.push(performance.now() - started);
      }
      expect(Math.max(...slowest)).to.be.below(500);
      expect(s.messages).to.deep.equal([]);
    } finally {
      s.close();
    }
  });

  it('refuses a subscription without a token, without json=true, or that is not a WebSocket', async () => {
    let refused = await subscribe(
      c,
      '/v1/sys/events/subscribe/kv*?json=true',
      'hvs.nonsense',
    ).catch((err: Error) => err.message);
    expect(refused).to.equal('refused: 401');
    refused = await subscribe(c, '/v1/sys/events/subscribe/kv*').catch((err: Error) => err.message);
    expect(refused).to.equal('refused: 400');
    const plain = await c.call('GET', '/v1/sys/events/subscribe/kv*?json=true', {
      headers: { 'x-vault-token': c.rootToken },
    });
    expect(plain.status).to.equal(400);
    expect(plain.body.errors[0]).to.match(/WebSocket/);
    // The server goes on serving plain requests after refused handshakes.
    expect((await c.call('GET', '/v1/auth/me')).status).to.equal(200);
  });

  it('a server that stops closes its subscriptions (1001, going away), and its stop does not wait on them', async () => {
    const other = await startTestCoffer();
    let s: Subscriber;
    try {
      s = await subscribe(other, '/vault/v1/sys/events/subscribe/kv*?json=true');
    } catch (err) {
      await other.close();
      throw err;
    }
    const started = Date.now();
    await other.close();
    expect(await s.closed).to.equal(1001);
    expect(Date.now() - started).to.be.below(5_000);
  });
});
