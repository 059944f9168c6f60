import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { command } from '../support/process.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

describe('coffer webhook: signed webhooks from the command line', function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let receiver: WebhookReceiver;
  let env: Record<string, string>;

  before(async () => {
    c = await startTestCoffer({ env: { COFFER_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    receiver = await startWebhookReceiver();
    env = { COFFER_ADDR: c.url, COFFER_TOKEN: c.rootToken };
  });
  after(async () => {
    await c?.close();
    await receiver?.close();
  });

  it('puts a webhook (its secret printed this once), lists, shows and tests it, and removes it saying so', async () => {
    const put = await command(
      [
        'webhook',
        'put',
        'deploys',
        '--url',
        receiver.url,
        '--namespaces',
        'cli/*',
        '--kinds',
        'write',
      ],
      env,
    );
    expect(put.code, put.stderr).to.equal(0);
    const [saved, shown, secret] = put.stdout.trimEnd().split('\n');
    expect(saved).to.equal('webhook deploys saved');
    expect(shown).to.match(/^signing secret \(shown this once/);
    expect(secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const listed = await command(['webhook', 'ls'], env);
    const rows = listed.stdout.trimEnd().split('\n');
    expect(rows[0]).to.match(/^NAME\s+URL\s+NAMESPACES\s+KINDS\s+DELIVERED\s+BEHIND$/);
    expect(rows[1]).to.match(
      new RegExp(`^deploys\\s+${receiver.url}\\s+cli/\\*\\s+write\\s+\\d+\\s+\\d+$`),
    );
    const show = await command(['webhook', 'show', 'deploys'], env);
    expect(JSON.parse(show.stdout)).to.include({ name: 'deploys', url: receiver.url });
    for (const out of [listed.stdout, show.stdout]) expect(out).to.not.include(secret!.slice(6));

    // A change of its URL alone keeps the secret (not printed again); --rotate-secret draws a new one.
    const kept = await command(['webhook', 'put', 'deploys', '--url', receiver.url], env);
    expect(kept.stdout).to.equal('webhook deploys saved\n');

    const tested = await command(['webhook', 'test', 'deploys'], env);
    expect(tested.code, tested.stderr).to.equal(0);
    expect(tested.stdout).to.match(/^delivered: the receiver answered 204 in \d+ ms\n$/);
    const message = receiver.received.at(-1)!;
    const body = new Webhook(secret!).verify(
      message.body,
      message.headers as Record<string, string>,
    );
    expect(body).to.include({ type: 'webhook.test' });
    receiver.answer = 500;
    const refused = await command(['webhook', 'test', 'deploys'], env);
    expect([refused.code, refused.stdout]).to.deep.equal([
      1,
      'not delivered: the receiver answered 500\n',
    ]);
    receiver.answer = 204;

    const removed = await command(['webhook', 'rm', 'deploys'], env);
    expect([removed.code, removed.stdout]).to.deep.equal([
      0,
      'webhook deploys removed: nothing more is sent to it\n',
    ]);
    const again = await command(['webhook', 'rm', 'deploys'], env);
    expect([again.code, again.stderr]).to.deep.equal([
      3,
      'coffer: webhook deploys: not found (404)\n',
    ]);
  });

  it('refuses without the manage_webhooks privilege, and a private address the server does not allow', async () => {
    const reader = await c.token({ role: 'reader' });
    const denied = await command(['webhook', 'ls'], { COFFER_ADDR: c.url, COFFER_TOKEN: reader });
    expect(denied.code).to.equal(4);
    const strict = await startTestCoffer();
    try {
      const privateUrl = await command(['webhook', 'put', 'x', '--url', receiver.url], {
        COFFER_ADDR: strict.url,
        COFFER_TOKEN: strict.rootToken,
      });
      expect(privateUrl.code).to.equal(1);
      expect(privateUrl.stderr).to.include('/url: must reach a public address');
    } finally {
      await strict.close();
    }
  });
});
