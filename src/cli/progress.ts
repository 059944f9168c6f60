/** Progress of a long command: a bar on a terminal (cli-progress), a line every few seconds otherwise. */
import cliProgress from 'cli-progress';
import type { Out } from './command-io.js';

/** A progress bar on a terminal, a line every few seconds otherwise. */
export function progress(out: Out, what: string): (done: number, total?: number) => void {
  const tty = process.stderr.isTTY === true;
  const bar = tty
    ? new cliProgress.SingleBar(
        { format: `{bar} {value}/{total} ${what}`, stream: process.stderr },
        cliProgress.Presets.shades_classic,
      )
    : null;
  let started = false;
  let lastLine = Date.now();
  return (done, total) => {
    if (bar) {
      if (!started) bar.start(total ?? done, done);
      started = true;
      bar.setTotal(Math.max(total ?? done, done));
      bar.update(done);
      if (total !== undefined && done >= total) bar.stop();
    } else if (Date.now() - lastLine > 5000) {
      lastLine = Date.now();
      out(`progress: ${done}${total === undefined ? '' : `/${total}`} ${what}`);
    }
  };
}
