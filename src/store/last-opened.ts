import { BoundedCache } from '../bounded-cache.js';

/**
 * The value last opened (decrypted or MAC-checked) from a stored record, by name, with the bytes it came
 * from: the same bytes give the same value, so a record read on every request is opened only when it changes.
 */
export class LastOpened<T> {
  private readonly entries: BoundedCache<string, { readonly bytes: Buffer; readonly value: T }>;

  constructor(capacity: number) {
    this.entries = new BoundedCache(capacity);
  }

  /** `open()`'s value for `bytes`, reusing the last one when `bytes` are the ones it came from; `open` may throw. */
  get(name: string, bytes: Uint8Array, open: () => T): T {
    const last = this.entries.get(name);
    if (last && Buffer.compare(last.bytes, bytes) === 0) return last.value;
    const value = open();
    this.remember(name, bytes, value);
    return value;
  }

  /** Records `value` as what `bytes` open to (bytes this process made itself, say, so known good). */
  remember(name: string, bytes: Uint8Array, value: T): void {
    this.entries.set(name, { bytes: Buffer.from(bytes), value });
  }
}
