/** A minimal client for tests against a Coffer process: one fresh connection per request. */
import { type IncomingHttpHeaders, request } from 'node:http';
import { checkAnswer } from './api-contract.js';

export interface Reply {
  readonly status: number;
  // biome-ignore lint/suspicious/noExplicitAny: a JSON body of any shape, which each test reads as it expects
  readonly body: any;
  readonly headers: IncomingHttpHeaders;
}

export function send(
  url: string,
  method: string,
  path: string,
  token: string,
  json?: unknown,
): Promise<Reply> {
  return sendText(url, method, path, token, json === undefined ? undefined : JSON.stringify(json));
}

/** Like send, with the body's text as it is (which need not be JSON); a reply that is not JSON has it as text. */
export function sendText(
  url: string,
  method: string,
  path: string,
  token: string,
  body: string | undefined,
): Promise<Reply> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(body));
  }
  return new Promise((resolve, reject) => {
    const req = request(`${url}/`, { method, path, headers, agent: false }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => {
        try {
          checkAnswer({
            method,
            path,
            status: res.statusCode ?? 0,
            header: (name) => {
              const value = res.headers[name];
              return Array.isArray(value) ? value.join(', ') : value;
            },
            text,
          });
        } catch (err) {
          reject(err);
          return;
        }
        resolve({
          status: res.statusCode ?? 0,
          body: text ? parsed(text) : undefined,
          headers: res.headers,
        });
      });
      res.on('error', reject);
    });
    // A request that gets no answer is a failure, never a hang. (15 s: a write LMDB does not settle is
    // answered within about 9 s, storage/lmdb-backend.ts.)
    req.setTimeout(15_000, () => req.destroy(new Error('no response within 15 s')));
    req.on('error', reject);
    req.end(body);
  });
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
