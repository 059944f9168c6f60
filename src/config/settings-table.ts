/**
 * The settings as people read them, made from their declaration: the table in docs/configuration.md, the
 * text of `coffer help settings`, and config/default.json (a starting point for a COFFER_CONFIG file). A
 * test checks that the committed files are what these make; `npm run docs:settings` writes them.
 */
import { configDefaults, ENV_SETTINGS } from './schema.js';

/** COFFER_CONFIG is read before any setting: the file the others may come from. */
const CONFIG_FILE_ROW = {
  env: 'COFFER_CONFIG',
  shownDefault: '(unset)',
  description:
    'a JSON file of settings (the names of `config/default.json`) laid over the defaults; the environment overrides it. It may not hold the root token, a PostgreSQL URL or a PKCS#11 PIN',
};

const rows = () => [...ENV_SETTINGS, CONFIG_FILE_ROW];

/** The markdown table of every variable. */
export function settingsTable(): string {
  return [
    '| variable | default | meaning |',
    '|---|---|---|',
    ...rows().map((s) => `| \`${s.env}\` | ${s.shownDefault} | ${s.description} |`),
  ].join('\n');
}

/** Plain text for a terminal: each variable, its default, and its meaning wrapped under it. */
export function settingsHelp(width = 100): string {
  const plain = (text: string) => text.replaceAll('`', '').replace(/\[([^\]]+)\]\([^)]+\)/g, '$1');
  const wrap = (text: string): string[] => {
    const lines: string[] = [];
    let line = '';
    for (const word of text.split(' ')) {
      if (line !== '' && line.length + 1 + word.length > width - 4) {
        lines.push(line);
        line = word;
      } else line = line === '' ? word : `${line} ${word}`;
    }
    return [...lines, line].map((l) => `    ${l}`);
  };
  return [
    'Settings: defaults, then the JSON file named by COFFER_CONFIG, then these variables.',
    '',
    ...rows().flatMap((s) => [
      `  ${s.env} (default ${plain(s.shownDefault)})`,
      ...wrap(plain(s.description)),
    ]),
    '',
  ].join('\n');
}

/** config/default.json as it should read. */
export function defaultsFile(): string {
  return `${JSON.stringify(configDefaults(), null, 2)}\n`;
}
