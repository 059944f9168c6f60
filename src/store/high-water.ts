/**
 * The newest state of a store a host has seen, kept in its data directory, for what a running server's
 * memory cannot catch: a store put back to an older copy while every server was stopped. One series per
 * counter that only grows — the keyring generation with its epoch (`g`), the number of audit chains (`a`)
 * — as one file per value seen, created once and never rewritten, so processes recording at the same time
 * can only add:
 *
 *   <data dir>/high-water/<store instance>/<series><n>[-<m>]   holding   hex MAC
 *
 * MAC = BLAKE2b-128 under the record MAC key (store/record-seal.ts) over the instance, the series and the
 * values: a file made without the key (to stop a server from starting) is ignored. Someone who can write
 * the data directory can still delete the files, or put back the whole directory with the store: such a
 * whole-store rollback, with every server's local state lost, cannot be told from a restore
 * (SECURITY.md says how to anchor it). With a key provider that has an anchor (the PKCS#11 token), the
 * newest value is also kept there, where the data directory's writer cannot delete it or put it back.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sodium from 'libsodium-wrappers';
import type { HighWaterAnchor } from '../keys/key-provider.js';

/** Files kept per series: the newest few (an older one is never the answer). */
const KEEP = 3;

export class HighWater {
  private readonly dir: string;
  private readonly file: RegExp;
  /** What this process last recorded, so a value is written once. */
  private recorded = 0;

  constructor(
    dataDir: string,
    private readonly instance: string,
    private readonly series: 'g' | 'a',
    private readonly macKey: () => Uint8Array,
    /** Also kept there, out of the data directory's writer's reach (the PKCS#11 token). */
    private readonly anchor?: HighWaterAnchor,
  ) {
    this.dir = join(dataDir, 'high-water', instance);
    this.file = new RegExp(`^${series}([0-9]{1,10})(?:-([0-9]{1,10}))?$`);
  }

  private get anchorName(): string {
    return `coffer-high-water/${this.instance}/${this.series}`;
  }

  /** The greatest value the anchor holds with a valid MAC, or null. */
  private anchored(): number[] | null {
    let texts: string[];
    try {
      texts = this.anchor?.read(this.anchorName) ?? [];
    } catch {
      return null; // the token cannot be reached now: the files still say what they say
    }
    let best: number[] | null = null;
    for (const text of texts) {
      const m = /^([0-9]{1,10}(?:-[0-9]{1,10})?):([0-9a-f]{32})$/.exec(text);
      if (!m) continue;
      const values = m[1]!.split('-').map(Number);
      if (m[2] === this.mac(values) && (best === null || values[0]! > best[0]!)) best = values;
    }
    return best;
  }

  /**
   * The greatest value recorded here with a valid MAC (its first number decides) — in the data directory
   * or in the anchor, whichever is greater — or null.
   */
  seen(): number[] | null {
    let best: number[] | null = this.anchored();
    for (const { name, values } of this.files()) {
      if (best !== null && values[0]! <= best[0]!) continue;
      let text: string;
      try {
        text = readFileSync(join(this.dir, name), 'utf8').trim();
      } catch {
        continue;
      }
      if (text === this.mac(values)) best = values;
    }
    return best;
  }

  /** Records that this host has seen `values` (a no-op for a first number it recorded already). */
  record(values: readonly number[]): void {
    if (values[0]! <= this.recorded) return;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const name = `${this.series}${values.join('-')}`;
    try {
      writeFileSync(join(this.dir, name), `${this.mac(values)}\n`, { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    this.recorded = values[0]!;
    if (this.anchor && (this.anchored()?.[0] ?? -1) < values[0]!) {
      try {
        this.anchor.write(this.anchorName, `${values.join('-')}:${this.mac(values)}`);
      } catch {
        // The token cannot be written now: the next value recorded writes it.
      }
    }
    const older = this.files()
      .sort((a, b) => b.values[0]! - a.values[0]!)
      .slice(KEEP);
    for (const { name: gone } of older) rmSync(join(this.dir, gone), { force: true });
  }

  private files(): { name: string; values: number[] }[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    return names.flatMap((name) => {
      const m = this.file.exec(name);
      return m ? [{ name, values: m.slice(1).filter(Boolean).map(Number) }] : [];
    });
  }

  private mac(values: readonly number[]): string {
    return Buffer.from(
      sodium.crypto_generichash(
        16,
        Buffer.from(`coffer-high-water/1\0${this.instance}\0${this.series}\0${values.join('\0')}`),
        this.macKey(),
      ),
    ).toString('hex');
  }
}
