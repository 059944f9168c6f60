/**
 * Automatic rotation (`keyring.rotate_after`, e.g. `90d`): every process checks on a timer whether the
 * active keyring version has reached that age and, if so, rotates; the check runs against the latest
 * keyring inside the rotation's retry loop, so several processes rotate once. Rotation only adds a version
 * for new writes; moving old records onto it stays an operator's `rewrap`.
 */
import type { OperatorEvents } from '../model/operator-events.js';
import type { KeyringHolder } from '../store/keyring-store.js';

export { parseDuration } from '../model/duration.js';

export interface AutoRotation {
  /** Stops the timer and waits for a check in progress. */
  stop(): Promise<void>;
}

/** Checks every tenth of `maxAgeMs` (at least every second, at most every hour). */
export function startAutoRotation(
  keyring: KeyringHolder,
  maxAgeMs: number,
  events: OperatorEvents,
  now: () => number,
): AutoRotation {
  const every = Math.min(3_600_000, Math.max(1000, Math.floor(maxAgeMs / 10)));
  let running: Promise<void> = Promise.resolve();
  const check = (): void => {
    running = running.then(async () => {
      try {
        const previous = keyring.current().activeVersion;
        const active = await keyring.rotateIfOlderThan(maxAgeMs, now());
        if (active !== null)
          await events.record(
            'keyring.rotate',
            { by: 'auto-rotate', previous_version: previous, active_version: active },
            'keyring rotated (keyring.rotate_after)',
          );
      } catch (err) {
        await events.record(
          'keyring.rotate.error',
          {
            by: 'auto-rotate',
            err: { name: (err as Error).name, message: (err as Error).message },
          },
          'automatic keyring rotation failed; will try again',
          'error',
        );
      }
    });
  };
  const timer = setInterval(check, every);
  timer.unref();
  check();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
