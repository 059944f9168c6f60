/** Scopes as people read them: `payments/prod:r shared/*:rw`. */
export function scopesText(
  scopes: readonly { namespace: string; read: boolean; write: boolean }[],
): string {
  return scopes.map((s) => `${s.namespace}:${s.read ? 'r' : ''}${s.write ? 'w' : ''}`).join(' ');
}

/** Plain text tables for people: a header row and columns padded to their widest cell. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
