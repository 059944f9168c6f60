/** A 32-bit unsigned integer as 4 big-endian bytes (version counters, keyring generations); absent reads as 0. */
export function packUint32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

export function unpackUint32(bytes: Uint8Array | undefined): number {
  return bytes === undefined
    ? 0
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).readUInt32BE(0);
}
