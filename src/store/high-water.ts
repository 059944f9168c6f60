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
 * (SECURITY.md says how to anchor it).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sodium from 'libsodium-wrappers';

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
  ) {
    this.dir = join(dataDir, 'high-water', instance);
    this.file = new RegExp(`^${series}([0-9]{1,10})(?:-([0-9]{1,10}))?$`);
  }

  /** The greatest value recorded here with a valid MAC (its first number decides), or null. */
  seen(): number[] | null {
    let best: number[] | null = null;
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
