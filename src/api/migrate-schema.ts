/**
 * The body of POST /v1/sys/keyring/migrate: the new provider's settings, as in the configuration file. Apart
 * from schemas.ts because it is made from the key providers' registry: the client's types (the
 * `@coffer/client` package) take schemas.ts, and with it nothing of the providers.
 */
import { PROVIDER_NAMES, providerRequestProperties } from '../keys/registry.js';

export const migrateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['key_provider'],
  properties: { key_provider: { enum: PROVIDER_NAMES }, ...providerRequestProperties() },
} as const;
