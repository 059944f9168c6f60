/**
 * Tidy: what the store keeps that nothing will use again is deleted, once an hour in each server process
 * (the first time at a random moment of the first hour, so that processes and servers sharing a store do
 * not all scan it at once; a second process finding the work done deletes nothing):
 *   - token records `token_retention` (COFFER_TOKEN_RETENTION, 7 days) after their token expired: until
 *     then `GET /v1/auth/tokens?all=true` lists them; an expired token is refused whatever its record says;
 *   - web console sessions that have ended (idle, or past their lifetime) without their cookie coming back;
 *   - change events older than `events_retention` (COFFER_EVENTS_RETENTION, 7 days): a stream that asks to
 *     resume before the oldest kept is told so (410), never given a gap.
 * A run that deleted something is an operator event (`store.tidy`, with the counts) in the audit log.
 */
import { randomInt } from 'node:crypto';
import type { OperatorEvents } from '../model/operator-events.js';

export interface TidyTasks {
  /** Deletes the token records whose token expired before `before`; how many. */
  readonly purgeTokens: (before: number) => Promise<number>;
  /** Deletes the console sessions that have ended; how many. */
  readonly purgeConsoleSessions: () => Promise<number>;
  /** Deletes the change events committed before `before`; how many. */
  readonly purgeEvents: (before: number) => Promise<number>;
}

export interface TidyOptions extends TidyTasks {
  readonly retentionMs: number;
  readonly eventsRetentionMs: number;
  readonly everyMs: number;
  readonly events: OperatorEvents;
  readonly now: () => number;
}

export interface Tidy {
  /** One run now (the schedule's runs are these); resolves with what it deleted. */
  run(): Promise<TidyDone>;
  /** Stops the schedule and waits for a run in progress. */
  stop(): Promise<void>;
}

/** What a run deleted. */
export interface TidyDone {
  readonly tokens: number;
  readonly console_sessions: number;
  readonly events: number;
}

export function startTidy(options: TidyOptions): Tidy {
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const once = async () => {
    const tokens = await options.purgeTokens(options.now() - options.retentionMs);
    const consoleSessions = await options.purgeConsoleSessions();
    const events = await options.purgeEvents(options.now() - options.eventsRetentionMs);
    const done = { tokens, console_sessions: consoleSessions, events };
    if (tokens + consoleSessions + events > 0)
      await options.events.record(
        'store.tidy',
        { tokens_purged: tokens, console_sessions_purged: consoleSessions, events_purged: events },
        'tidied the store: expired tokens, ended console sessions and old change events deleted',
      );
    return done;
  };
  const run = (): Promise<TidyDone> => {
    const next = running.then(once, once);
    running = next.catch(() => undefined);
    return next;
  };
  const scheduled = (): void => {
    run().catch((err: unknown) =>
      options.events.record(
        'store.tidy.error',
        { err: { name: (err as Error).name, message: (err as Error).message } },
        'tidying the store failed; will try again',
        'error',
      ),
    );
  };
  const schedule = (wait: number): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      scheduled();
      schedule(options.everyMs);
    }, wait);
    timer.unref();
  };
  schedule(randomInt(options.everyMs));
  return {
    run,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
