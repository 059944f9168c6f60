/**
 * Following what other processes change in the store (the keyring, the roles): `read` runs at once when
 * the storage announces a change (`onChange`: PostgreSQL's NOTIFY; undefined where it cannot tell), and
 * every `everyMs` in any case. One read at a time: a notice arriving during a read makes one more after it.
 * A read that fails is logged (`what` names it) and tried again at the next tick.
 */
import type { Logger } from 'pino';

export function followChanges(deps: {
  readonly read: () => Promise<unknown>;
  readonly onChange: (listener: () => void) => (() => void) | undefined;
  readonly everyMs: number;
  readonly log: Logger;
  /** What could not be read, for the log: "the keyring", "the roles". */
  readonly what: string;
}): { stop(): void } {
  let reading: Promise<void> | null = null;
  let again = false;
  const check = (): void => {
    if (reading) {
      again = true;
      return;
    }
    reading = deps
      .read()
      .then(() => undefined)
      .catch((err: unknown) =>
        deps.log.error(
          { err: { message: (err as Error).message } },
          `could not reload ${deps.what}`,
        ),
      )
      .finally(() => {
        reading = null;
        if (again) {
          again = false;
          check();
        }
      });
  };
  const timer = setInterval(check, deps.everyMs);
  timer.unref();
  const unwatch = deps.onChange(check);
  return {
    stop() {
      clearInterval(timer);
      unwatch?.();
    },
  };
}
