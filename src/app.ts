/**
 * The composition root: the only place Coffer's objects are constructed and wired. Nothing here is
 * module-level state, so two apps can run in one process (as the tests do).
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import { Argon2Gate } from './auth/argon2-gate.js';
import { Authenticator } from './auth/authenticator.js';
import { PrincipalFactory } from './auth/principal.js';
import { roleTable } from './auth/roles.js';
import { establishRootToken } from './auth/root-token.js';
import { TokenService } from './auth/token-service.js';
import { TokenStore } from './auth/token-store.js';
import type { CofferConfig } from './config/schema.js';
import { sodiumReady } from './crypto/aead.js';
import { KeyringHolder } from './crypto/keyring-store.js';
import { buildHttpApp } from './http/http-app.js';
import type { OutcomeSink } from './http/outcome.js';
import { openKeyProvider } from './keys/registry.js';
import { KvService } from './kv/kv-service.js';
import type { StorageBackend } from './storage/backend.js';
import { openStorage } from './storage/registry.js';

export interface StartOptions {
  readonly log?: Logger;
  /** Receives a generated root token, the only time it exists in clear (main.ts prints it to stderr). */
  readonly onGeneratedRootToken?: (token: string) => void;
  readonly onOutcome?: OutcomeSink;
  readonly now?: () => number;
}

export interface RunningCoffer {
  readonly server: Server;
  /** e.g. http://127.0.0.1:8750 */
  readonly url: string;
  readonly storage: StorageBackend;
  close(): Promise<void>;
}

export async function startCoffer(config: CofferConfig, options: StartOptions = {}): Promise<RunningCoffer> {
  const log = options.log ?? pino({ level: config.log_level });
  const now = options.now ?? Date.now;
  await sodiumReady();

  const storage = openStorage(config);
  try {
    const opened = await openKeyProvider(config);
    if (opened.notice) log.info(opened.notice);
    const { holder: keyring, created } = await KeyringHolder.open(storage, opened.provider, now());
    if (created) log.info('created a new keyring, wrapped by the %s key provider', opened.provider.name);

    const argon2 = new Argon2Gate();
    const root = await establishRootToken(storage, argon2, config.root_token, now());
    if (root.generated) options.onGeneratedRootToken?.(root.generated);
    if (root.replaced) log.info('root token set from COFFER_ROOT_TOKEN');
    if (config.root_token !== undefined && config.root_token.length < 32) {
      log.warn('COFFER_ROOT_TOKEN is shorter than 32 characters; use a long random value');
    }

    const principals = new PrincipalFactory(roleTable(config.roles));
    const tokenStore = new TokenStore(storage);
    const authenticator = new Authenticator({ tokens: tokenStore, argon2, principals, root: root.record, now });
    const tokens = new TokenService({
      store: tokenStore, argon2, principals, root: root.record, defaultTtl: config.default_ttl, maxTtl: config.max_ttl, now,
    });
    const kv = new KvService({
      storage,
      keyring,
      maxValueBytes: config.max_value_bytes,
      now,
      onIntegrityError: (where, reason) => log.error({ ...where, reason }, 'INTEGRITY ERROR: a stored record failed to open or verify; it was not returned'),
    });
    const app = buildHttpApp({
      authenticator, tokens, kv, log, maxValueBytes: config.max_value_bytes, maxTtl: config.max_ttl,
      ...(options.onOutcome ? { onOutcome: options.onOutcome } : {}),
    });

    const tls = config.tls.cert !== null && config.tls.key !== null;
    const server = tls
      ? createHttpsServer({ cert: readFileSync(config.tls.cert!), key: readFileSync(config.tls.key!) }, app)
      : createHttpServer(app);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => resolve());
    });
    const address = server.address() as AddressInfo;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    const url = `${tls ? 'https' : 'http'}://${host}:${address.port}`;
    log.info({ url, data_dir: config.data_dir }, 'coffer listening');

    return {
      server,
      url,
      storage,
      async close() {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        await storage.close();
      },
    };
  } catch (err) {
    await storage.close();
    throw err;
  }
}
