/**
 * /v1/sys/webhooks — signed webhooks for the change events (root: the manage_webhooks privilege). The
 * service (webhooks/webhook-admin.ts) checks each change, stores it and records it as an operator event;
 * delivery runs in whichever server process holds the delivery lease (webhooks/webhook-dispatch.ts).
 */
import type { Request } from 'express';
import { principalOf } from '../../api/context.js';
import type { Operation } from '../../api/operation.js';
import { rawPath } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import { json, ok } from '../../api/response-schemas.js';
import {
  webhookList,
  webhookPutSchema,
  webhookTestResult,
  webhookView,
  webhookWithSecret,
} from '../../api/webhook-schemas.js';
import { invalid, notFound } from '../../errors.js';
import {
  WEBHOOK_NAME as NAME,
  type WebhookAdmin,
  type WebhookInput,
} from '../webhooks/webhook-admin.js';

const PREFIX = '/v1/sys/webhooks';

const nameParam = [
  { name: 'name', in: 'path', required: true, schema: { type: 'string', pattern: NAME.source } },
];

/** The {name} of /v1/sys/webhooks/{name}[/test]: a name (400 for a PUT of one that cannot be given, else 404). */
function nameIn(req: Request, suffix = ''): string {
  const path = rawPath(req);
  const name = path.slice(PREFIX.length + 1, path.length - suffix.length);
  if (NAME.test(name)) return name;
  if (req.method === 'PUT')
    throw invalid(`a webhook name must match ${NAME.source}`, [
      { field: '/name', in: 'path', message: `must match ${NAME.source}` },
    ]);
  throw notFound(`no webhook "${name.slice(0, 64)}"`);
}

export function kvWebhookOperations({
  webhooks,
  respond,
}: {
  webhooks: WebhookAdmin;
  respond: Responder;
}): Operation[] {
  const list: Operation = {
    method: 'GET',
    template: PREFIX,
    action: 'webhook.list',
    privilege: 'manage_webhooks',
    docs: [
      {
        operationId: 'listWebhooks',
        summary: 'Every webhook, with how far its delivery has got (root); never a secret',
        responses: { 200: ok('The webhooks, by name', webhookList) },
      },
    ],
    async handler(_req, res) {
      respond.json(res, 200, { webhooks: await webhooks.list() });
    },
  };

  const get: Operation = {
    method: 'GET',
    template: `${PREFIX}/{name}`,
    action: 'webhook.read',
    privilege: 'manage_webhooks',
    docs: [
      {
        operationId: 'getWebhook',
        summary: 'One webhook, with how far its delivery has got (root); never its secret',
        pathParams: nameParam,
        responses: { 200: ok('The webhook', webhookView) },
        errors: [404],
      },
    ],
    async handler(req, res) {
      respond.json(res, 200, await webhooks.get(nameIn(req)));
    },
  };

  const put: Operation<never, WebhookInput> = {
    method: 'PUT',
    template: `${PREFIX}/{name}`,
    action: 'webhook.put',
    privilege: 'manage_webhooks',
    body: { schema: webhookPutSchema, required: true },
    docs: [
      {
        operationId: 'putWebhook',
        summary:
          'Create or change a webhook (root): the change events its filters select are POSTed to its URL, signed (Standard Webhooks), at least once and in order, from the changes committed after it was made. Its signing secret is in the answer that creates it or rotates it (rotate_secret), and never again',
        pathParams: nameParam,
        responses: {
          200: ok('Changed (with its new secret when rotated)', webhookWithSecret),
          201: ok('Created, with its signing secret', webhookWithSecret),
        },
      },
    ],
    async handler(req, res, input) {
      const name = nameIn(req);
      const done = await webhooks.put(name, await input.body(), principalOf(res).id);
      res.setHeader('Cache-Control', 'no-store');
      respond.json(res, done.created ? 201 : 200, {
        ...done.view,
        ...(done.secret ? { secret: done.secret } : {}),
      });
    },
  };

  const remove: Operation = {
    method: 'DELETE',
    template: `${PREFIX}/{name}`,
    action: 'webhook.delete',
    privilege: 'manage_webhooks',
    docs: [
      {
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook (root): nothing more is sent to it',
        pathParams: nameParam,
        responses: { 204: { description: 'Deleted' } },
        errors: [404],
      },
    ],
    async handler(req, res) {
      await webhooks.remove(nameIn(req), principalOf(res).id);
      respond.empty(res, 204);
    },
  };

  const test: Operation = {
    method: 'POST',
    // Under the same template as the webhook itself (one template per path prefix), documented as /test.
    template: `${PREFIX}/{name}`,
    action: 'webhook.test',
    privilege: 'manage_webhooks',
    serves: (req) => rawPath(req).endsWith('/test'),
    docs: [
      {
        operationId: 'testWebhook',
        path: `${PREFIX}/{name}/test`,
        summary:
          "Send a webhook one signed `webhook.test` message now (root), outside its events' order; the answer says whether the receiver took it",
        pathParams: nameParam,
        responses: { 200: { description: 'What happened', ...json(webhookTestResult) } },
        errors: [404],
      },
    ],
    async handler(req, res) {
      respond.json(res, 200, await webhooks.test(nameIn(req, '/test'), principalOf(res).id));
    },
  };

  return [list, get, put, remove, test] as Operation[];
}
