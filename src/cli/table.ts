import { printable } from './printable.js';

/** Scopes as people read them: `payments/prod:r shared/*:rw`. */
export function scopesText(
  scopes: readonly { namespace: string; read: boolean; write: boolean }[],
): string {
  return scopes.map((s) => `${s.namespace}:${s.read ? 'r' : ''}${s.write ? 'w' : ''}`).join(' ');
}

/**
 * Plain text tables for people: a header row and columns padded to their widest cell. Each cell is shown
 * printable (printable.ts): a name someone else chose cannot act on the terminal.
 */
export function table(header: readonly string[], cellRows: readonly (readonly string[])[]): string {
  const rows = cellRows.map((r) => r.map(printable));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
