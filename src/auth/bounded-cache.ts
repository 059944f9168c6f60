/** A Map bounded to `capacity` entries that evicts the least recently used one. */
export class BoundedCache<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity)
      this.entries.delete(this.entries.keys().next().value as K);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }
}

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
    this.entries.set(name, { bytes: Buffer.from(bytes), value });
    return value;
  }
}
