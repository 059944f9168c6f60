/**
 * `npm run docs:settings`: writes the settings table into docs/configuration.md (between its markers) and
 * config/default.json, from the settings' declaration (config/settings-table.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defaultsFile, settingsTable } from './settings-table.js';

export const BEGIN = '<!-- settings: made by npm run docs:settings from src/config/settings.ts -->';
export const END = '<!-- end of settings -->';

const root = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));

/** `text` with the part between the markers replaced by the table. */
export function withTable(text: string): string {
  const from = text.indexOf(BEGIN);
  const to = text.indexOf(END);
  if (from < 0 || to < from)
    throw new Error(`docs/configuration.md lacks the markers ${BEGIN} … ${END}`);
  return `${text.slice(0, from + BEGIN.length)}\n${settingsTable()}\n${text.slice(to)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const docs = root('docs/configuration.md');
  writeFileSync(docs, withTable(readFileSync(docs, 'utf8')));
  writeFileSync(root('config/default.json'), defaultsFile());
}
