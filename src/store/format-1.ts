/**
 * How format 1 (the releases before the storage barrier) kept each kind of record plain: the decoders the
 * upgrade (upgrade.ts) reads a plain record with, named by the one table of record kinds (record-kinds.ts).
 */
import { Packr } from 'msgpackr';

/** The record (sealed kinds) or its bytes (MACed kinds), or null when the bytes are not one of this kind. */
export type Format1Decode = (bytes: Uint8Array) => Record<string, unknown> | Uint8Array | null;

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

/** Plain msgpack, as format 1 wrote it. */
export function unpackPlain<T>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}

function isRecordWith(record: unknown, field: string): record is Record<string, unknown> {
  return (
    record !== null &&
    typeof record === 'object' &&
    typeof (record as Record<string, unknown>)[field] === 'string'
  );
}

/** A kind format 1 did not have: there is nothing to seal. */
export const NOT_IN_FORMAT_1: Format1Decode = () => null;

/** A plain key meta (msgpack {l, t, f}): its bytes. */
export function plainMeta(bytes: Uint8Array): Uint8Array | null {
  const meta = unpackPlain<Record<string, unknown> | null>(bytes);
  return meta !== null &&
    typeof meta === 'object' &&
    typeof meta.l === 'number' &&
    typeof meta.t === 'string' &&
    typeof meta.f === 'number'
    ? bytes
    : null;
}

/** A plain audit line holding an intent entry: its bytes. */
export const intentLine: Format1Decode = (bytes) =>
  isRecordWith(JSON.parse(Buffer.from(bytes).toString('utf8')), 'kind') ? bytes : null;

/** Plain msgpack holding a string `field`: token and root token records. */
export const msgpackWith =
  (field: string): Format1Decode =>
  (bytes) => {
    const record = unpackPlain<unknown>(bytes);
    return isRecordWith(record, field) ? record : null;
  };

/** Plain JSON holding a string `field`: audit chain records. */
export const jsonWith =
  (field: string): Format1Decode =>
  (bytes) => {
    const record: unknown = JSON.parse(Buffer.from(bytes).toString('utf8'));
    return isRecordWith(record, field) ? record : null;
  };

/** A plain 4-byte number: its bytes. */
export const fourBytes: Format1Decode = (bytes) => (bytes.byteLength === 4 ? bytes : null);

/** Plain msgpack holding a string `field`: its bytes (a MACed kind). */
export const msgpackBytesWith =
  (field: string): Format1Decode =>
  (bytes) =>
    isRecordWith(unpackPlain<unknown>(bytes), field) ? bytes : null;
