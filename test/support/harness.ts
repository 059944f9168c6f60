/**
 * Test harness: a real Coffer on an ephemeral port, with a fresh temporary data directory and key file,
 * reached over real HTTP. The root token is random per run and never written to disk by the tests.
 */
import { rmSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { pack, unpack } from 'msgpackr';
import { pino } from 'pino';
import { type RunningCoffer, type StartOptions, startCoffer } from '../../src/app.js';
import type { VerifyResult } from '../../src/audit/verify.js';
import { verifyLog } from '../../src/audit/verify-log.js';
import { generateToken } from '../../src/auth/token-format.js';
import { loadConfig } from '../../src/config/load.js';
import type { CofferConfig } from '../../src/config/schema.js';
import { KeyProviderError } from '../../src/keys/key-provider.js';
import type { StorageBackend } from '../../src/storage/backend.js';
import { backendOf } from '../../src/store/backend-of.js';
import { KEYRING_KEY } from '../../src/store/keyring-store.js';
import { checkAnswer } from './api-contract.js';
import { tempDir } from './temp-dirs.js';

export interface TestCoffer {
  readonly url: string;
  readonly rootToken: string;
  readonly dataDir: string;
  readonly config: CofferConfig;
  readonly app: RunningCoffer;
  /** The storage backend under the server, as someone who can write the storage reaches it. */
  readonly storage: StorageBackend;
  /** Calls the API; `token: null` sends no Authorization header. */
  call(method: string, path: string, init?: CallInit): Promise<ApiResponse>;
  /** Creates a token with the root token and returns its value. */
  token(body: Record<string, unknown>): Promise<string>;
  put(
    path: string,
    value: string,
    type?: 'config' | 'secret',
    token?: string,
  ): Promise<ApiResponse>;
  /**
   * The whole log verified as `coffer audit verify` does it (or only `files`): with the store's record of
   * the chains and every key.
   */
  verifyLog(files?: string[]): Promise<VerifyResult>;
  /** Stops and starts again on the same data directory and key. */
  restart(): Promise<TestCoffer>;
  close(): Promise<void>;
}

export interface CallInit {
  readonly token?: string | null;
  readonly json?: unknown;
  readonly body?: string;
  readonly headers?: Record<string, string | string[]>;
}

export interface ApiResponse {
  readonly status: number;
  readonly headers: Headers;
  // Tests read arbitrary fields of responses.
  // biome-ignore lint/suspicious/noExplicitAny: a JSON body of any shape, which each test reads as it expects
  readonly body: any;
  readonly text: string;
}

export interface HarnessOptions {
  readonly env?: Record<string, string>;
  readonly start?: StartOptions;
  readonly dataDir?: string;
  readonly rootToken?: string;
  /** Remove the directory on close (default: when the harness made it). */
  readonly ownsDir?: boolean;
}

export { tempDir } from './temp-dirs.js';

export async function startTestCoffer(options: HarnessOptions = {}): Promise<TestCoffer> {
  const dir = options.dataDir ?? tempDir();
  const rootToken = options.rootToken ?? generateToken().value;
  const config = loadConfig({
    COFFER_PORT: '0',
    COFFER_DATA_DIR: join(dir, 'data'),
    COFFER_MASTER_KEY_FILE: join(dir, 'keys', 'master.key'),
    COFFER_ROOT_TOKEN: rootToken,
    COFFER_LOG_LEVEL: 'silent',
    // Tests fail authentications on purpose; test/http/rate-limit.test.ts covers the budget itself.
    COFFER_AUTH_FAILURE_BURST: '1000000',
    COFFER_AUTH_FLOOD_BURST: '1000000',
    ...options.env,
  });
  const app = await startCoffer(config, { log: pino({ level: 'silent' }), ...options.start });
  const url = app.url;

  async function call(method: string, path: string, init: CallInit = {}): Promise<ApiResponse> {
    const headers: Record<string, string | string[]> = { ...init.headers };
    const token = init.token === undefined ? rootToken : init.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body = init.body;
    if (init.json !== undefined) {
      body = JSON.stringify(init.json);
      headers['content-type'] ??= 'application/json';
    }
    // node:http sends the path exactly as given (fetch would normalise dot segments away).
    const res = await new Promise<{ status: number; headers: Headers; text: string }>(
      (resolve, reject) => {
        if (body !== undefined) headers['content-length'] ??= String(Buffer.byteLength(body));
        // A fresh connection per call: a response that leaves a request body unread may close its socket.
        const req = request(`${url}/`, { method, path, headers, agent: false }, (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const out = new Headers();
            for (const [name, value] of Object.entries(response.headers)) {
              if (value !== undefined)
                out.set(name, Array.isArray(value) ? value.join(', ') : value);
            }
            resolve({
              status: response.statusCode ?? 0,
              headers: out,
              text: Buffer.concat(chunks).toString('utf8'),
            });
          });
          response.on('error', reject);
        });
        req.on('error', reject);
        req.end(body);
      },
    );
    const text = res.text;
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    checkAnswer({
      method,
      path,
      status: res.status,
      header: (name) => res.headers.get(name) ?? undefined,
      text,
    });
    return { status: res.status, headers: res.headers, body: parsed, text };
  }

  const harness: TestCoffer = {
    url,
    rootToken,
    dataDir: dir,
    config,
    app,
    storage: backendOf(app.store),
    call,
    async verifyLog(files) {
      const verified = await verifyLog({
        auditDir: config.audit.dir!,
        ...(files ? { files } : {}),
        records: app.records.audit,
        keyring: app.keyring.current(),
        now: Date.now(),
      });
      return verified.result;
    },
    async token(body) {
      const res = await call('POST', '/v1/auth/token', { json: body });
      if (res.status !== 201) throw new Error(`token creation failed: ${res.status} ${res.text}`);
      return res.body.token as string;
    },
    put(path, value, type = 'secret', token) {
      return call('PUT', `/v1/kv/${path}`, {
        json: { value, type },
        ...(token === undefined ? {} : { token }),
      });
    },
    async restart() {
      await app.close();
      return startTestCoffer({
        ...options,
        dataDir: dir,
        rootToken,
        ownsDir: options.ownsDir ?? !options.dataDir,
      });
    },
    async close() {
      await app.close();
      if (options.ownsDir ?? !options.dataDir) rmSync(dir, { recursive: true, force: true });
    },
  };
  return harness;
}

/** Starts a Coffer that must fail to open its master key, and returns the provider's error. */
export async function keyProviderStartError(
  dataDir: string,
  env: Record<string, string>,
  rootToken: string,
): Promise<KeyProviderError> {
  try {
    const c = await startTestCoffer({ dataDir, rootToken, env });
    await c.close();
  } catch (err) {
    if (err instanceof KeyProviderError) return err;
    throw err;
  }
  throw new Error('start-up did not fail');
}

/** Flips one bit of the provider-wrapped keyring bytes (not of the record around them), as an attacker with the file could. */
export async function tamperWrappedKeyring(storage: StorageBackend, fromEnd = 5): Promise<void> {
  const record = unpack((await storage.get(KEYRING_KEY))!) as { wrapped: Uint8Array };
  const wrapped = Buffer.from(record.wrapped);
  wrapped[wrapped.length - fromEnd]! ^= 1;
  await storage.atomic([], () => ({
    writes: [{ op: 'put', key: KEYRING_KEY, value: pack({ ...record, wrapped }) }],
    result: undefined,
  }));
}
