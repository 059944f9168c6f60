/**
 * Who is waiting for which key to change (GET …?wait_after=N, If-None-Match with a timeout), and waking them
 * when it does: a write in this process (the kv service tells), in another worker of this server (the
 * supervisor relays what each worker tells), or on another server sharing PostgreSQL (its NOTIFY of the key's
 * index, heard by every server). A waiter is woken to read again, never told a value: what it answers is
 * what its own read finds, with its own rights. No polling: a held request costs its entry here and its
 * socket until a change or its timeout.
 *
 * Held requests are bounded per process (`max`): one more is refused with 429 and Retry-After, so that
 * waiting clients cannot take a server's memory or sockets. And shared: one token may hold at most a
 * quarter of them, one client address at most half (each at least one), so that one caller cannot hold
 * every slot and leave the others 429.
 */
import { AppError } from '../errors.js';

export interface KeyRef {
  readonly namespace: string;
  readonly key: string;
}

/** How a server process tells its siblings of a key it changed, and hears of theirs. */
export interface KeyPeers {
  /**
   * Tells the siblings of a change this process made (undefined: the event log moved on without a key
   * changing: a revocation, a rotation); false when none needed telling (none waits).
   */
  publish(ref: KeyRef | undefined): boolean;
  /** Hears the siblings' changes (undefined: their event log moved on without a key changing). */
  subscribe(listener: (ref: KeyRef | undefined) => void): void;
  /**
   * This process holds waits at `where` (wakesOf) now, or no longer: its siblings' changes are relayed to
   * it only where it does (server/change-relay.ts). Resolves once the relay has taken it.
   */
  interest?(where: string, held: boolean): Promise<void>;
}

export interface Hold {
  /**
   * Resolves once the changes this hold waits for reach this process from its siblings too (at once in a
   * process without siblings): read what the wait is for only after it, or a sibling's change made in
   * between could wake no one.
   */
  readonly ready: Promise<void>;
  /** Resolves true once woken (at once if woken since the last call), false at `deadline` or when aborted or closed. */
  next(deadline: number, signal?: AbortSignal): Promise<boolean>;
  release(): void;
}

/** Who holds a wait: the caller's token id and client address. */
export interface WaitHolder {
  readonly token: string;
  readonly address: string;
}

/** Until when, and until what, a read waits for a change. */
export interface WaitLimit {
  readonly deadline: number;
  readonly signal?: AbortSignal;
  /** Who waits: each token and each client address may hold only a share of the slots. */
  readonly holder?: WaitHolder;
}

/**
 * `attempt`'s answer, now or after a change to `key` of `namespace` (any key of it, without one), or
 * 'unchanged' at the deadline. The slot is held before the first attempt, so a change between an attempt
 * and the wait still wakes it. A service made without `changes` (a test's) refuses to wait (500).
 */
export async function untilChanged<T>(
  changes: KeyChanges | undefined,
  namespace: string,
  key: string | undefined,
  limit: WaitLimit,
  attempt: () => Promise<T | undefined>,
): Promise<T | 'unchanged'> {
  if (!changes) throw new AppError('internal', 'waiting for a change is not set up');
  const hold = changes.hold(namespace, key, limit.holder);
  try {
    await hold.ready;
    for (;;) {
      const answer = await attempt();
      if (answer !== undefined) return answer;
      if (!(await hold.next(limit.deadline, limit.signal))) return 'unchanged';
    }
  } finally {
    hold.release();
  }
}

/** Tells the other processes that a key changed here (undefined: the event log moved on, no key named). */
export type Publish = (ref: KeyRef | undefined) => void;

/** Tells the other processes' relay where this process holds waits (KeyPeers.interest). */
export type Interest = (where: string, held: boolean) => Promise<void>;

/** One held request's registration. */
interface Waiter {
  woken: boolean;
  wake: (() => void) | undefined;
}

const NAMESPACE = '\u0001ns';
/** Where a hold for every change is kept (an event stream's: kv/event-stream.ts). */
const EVERY = '\u0002every';
const id = (namespace: string, key: string): string => `${namespace}\u0000${key}`;
const RESOLVED = Promise.resolve();

/**
 * Where the waits a change to `ref` wakes are held: its key's, its namespace's, and every change's; for an
 * event that names no key (undefined: a revocation, a rotation), every change's alone.
 */
export function wakesOf(ref: KeyRef | undefined): string[] {
  if (ref === undefined) return [EVERY];
  return [id(ref.namespace, ref.key), id(ref.namespace, NAMESPACE), EVERY];
}

export class KeyChanges {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private held = 0;
  private closed = false;
  private readonly listeners: (() => void)[] = [];
  /** Waits held per token and per client address. */
  private readonly byToken = new Map<string, number>();
  private readonly byAddress = new Map<string, number>();
  /** Per place waited at, when the siblings' relay has taken this process's interest in it. */
  private readonly ready = new Map<string, Promise<void>>();

  constructor(
    private readonly max: number,
    private readonly publish: Publish = () => undefined,
    /** Where siblings are told of this process's waits; none in a process without siblings. */
    private readonly interest?: Interest,
  ) {}

  /** The server is stopping: no new wait, and those held are answered. */
  get closing(): boolean {
    return this.closed;
  }

  /** How many requests are held now. */
  get size(): number {
    return this.held;
  }

  /**
   * Registers a wait for `key` in `namespace`, for any key directly in `namespace` (key undefined), or for
   * any change at all (`every`: an event stream, which reads the event log when woken).
   */
  hold(namespace: string, key: string | undefined, holder?: WaitHolder, every = false): Hold {
    if (this.held >= this.max)
      throw new AppError(
        'too_many_requests',
        `this server holds as many waiting requests as it allows (${this.max}); try again shortly, or read without waiting`,
        undefined,
        { 'Retry-After': '1' },
      );
    if (holder) {
      const tokenShare = Math.max(1, Math.floor(this.max / 4));
      const addressShare = Math.max(1, Math.floor(this.max / 2));
      if ((this.byToken.get(holder.token) ?? 0) >= tokenShare)
        throw new AppError(
          'too_many_requests',
          `this token holds as many waiting requests as one token may on this server (${tokenShare}, a quarter of COFFER_MAX_WAITS); try again shortly, or read without waiting`,
          undefined,
          { 'Retry-After': '1' },
        );
      if ((this.byAddress.get(holder.address) ?? 0) >= addressShare)
        throw new AppError(
          'too_many_requests',
          `this address holds as many waiting requests as one address may on this server (${addressShare}, half of COFFER_MAX_WAITS); try again shortly, or read without waiting`,
          undefined,
          { 'Retry-After': '1' },
        );
      count(this.byToken, holder.token, 1);
      count(this.byAddress, holder.address, 1);
    }
    this.held++;
    return this.register(every ? EVERY : id(namespace, key ?? NAMESPACE), () => {
      this.held--;
      if (holder) {
        count(this.byToken, holder.token, -1);
        count(this.byAddress, holder.address, -1);
      }
    });
  }

  /**
   * Woken by every change, as an event stream is, for the server's own use (webhook delivery): not one of
   * the waits clients hold, so COFFER_MAX_WAITS does not bound it.
   */
  follow(): Hold {
    return this.register(EVERY, () => undefined);
  }

  private register(where: string, released: () => void): Hold {
    const waiter: Waiter = { woken: false, wake: undefined };
    let set = this.waiters.get(where);
    if (!set) {
      set = new Set<Waiter>();
      this.waiters.set(where, set);
      this.announce(where, true);
    }
    set.add(waiter);
    let done = false;
    // One timer and one abort listener per hold, kept from one wait to the next: an event stream waits
    // again after every delivery, and making them anew each time was a part of what a delivery cost.
    let pending: ((woken: boolean) => void) | undefined;
    let until = 0;
    let timer: NodeJS.Timeout | undefined;
    let timerAt = 0;
    let heard: AbortSignal | undefined;
    const onAbort = (): void => pending?.(false);
    const onTimer = (): void => {
      timer = undefined;
      if (!pending) return;
      if (Date.now() >= until) pending(false);
      else arm();
    };
    // A timer that fires at or before the wait's deadline stays: it sets itself again when it fires early.
    const arm = (): void => {
      if (timer !== undefined && timerAt <= until) return;
      clearTimeout(timer);
      timerAt = until;
      timer = setTimeout(onTimer, Math.max(0, until - Date.now()));
    };
    const waiting = set;
    return {
      ready: this.ready.get(where) ?? RESOLVED,
      next: (deadline, signal) => {
        if (waiter.woken) {
          waiter.woken = false;
          return Promise.resolve(true);
        }
        if (this.closed || signal?.aborted || Date.now() >= deadline) return Promise.resolve(false);
        if (signal !== heard) {
          heard?.removeEventListener('abort', onAbort);
          signal?.addEventListener('abort', onAbort, { once: true });
          heard = signal;
        }
        return new Promise<boolean>((resolve) => {
          pending = (woken) => {
            pending = undefined;
            waiter.wake = undefined;
            waiter.woken = false;
            resolve(woken);
          };
          waiter.wake = () => pending?.(!this.closed);
          until = deadline;
          arm();
        });
      },
      release: () => {
        if (done) return;
        done = true;
        pending?.(false);
        clearTimeout(timer);
        timer = undefined;
        heard?.removeEventListener('abort', onAbort);
        heard = undefined;
        released();
        waiting.delete(waiter);
        if (waiting.size === 0 && this.waiters.get(where) === waiting) {
          this.waiters.delete(where);
          this.announce(where, false);
        }
      },
    };
  }

  /**
   * Tells the siblings' relay that waits at `where` are held here now, or no longer. Once it has taken an
   * interest, the listeners hear of a change (the event feed reads again): a sibling's change made before
   * then was not relayed here.
   */
  private announce(where: string, held: boolean): void {
    if (!this.interest) return;
    const taken = this.interest(where, held);
    if (!held) {
      this.ready.delete(where);
      taken.catch(() => undefined);
      return;
    }
    this.ready.set(
      where,
      taken.then(
        () => {
          for (const listener of this.listeners) listener();
        },
        () => undefined,
      ),
    );
  }

  /** Tells `listener` of every change, before any waiter is woken (the event feed: event-feed.ts). */
  onAnyChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** A key changed here: wake its waiters and its namespace's, and tell the other processes. */
  changed(ref: KeyRef): void {
    this.wake(ref);
    this.publish(ref);
  }

  /**
   * This process committed events that no key's change announces (a token revoked, the keyring rotated):
   * every event stream and webhook reads, here and in the sibling processes.
   */
  changedEvery(): void {
    this.heardEvery();
    this.publish(undefined);
  }

  /** A key changed elsewhere (another worker, another server): wake its waiters. */
  heard(ref: KeyRef): void {
    this.wake(ref);
  }

  /** Something changed elsewhere, what is not known (the event log moved on): every event stream reads. */
  heardEvery(): void {
    for (const listener of this.listeners) listener();
    const set = this.waiters.get(EVERY);
    if (set) for (const waiter of set) this.signal(waiter);
  }

  /** News may have been lost (a change feed reconnected): every waiter reads again. */
  heardAll(): void {
    for (const listener of this.listeners) listener();
    for (const set of this.waiters.values()) for (const waiter of set) this.signal(waiter);
  }

  /** The server is stopping: every held request answers now, and no new one waits. */
  close(): void {
    this.closed = true;
    this.heardAll();
  }

  private wake(ref: KeyRef): void {
    for (const listener of this.listeners) listener();
    for (const where of wakesOf(ref)) {
      const set = this.waiters.get(where);
      if (set) for (const waiter of set) this.signal(waiter);
    }
  }

  private signal(waiter: Waiter): void {
    if (waiter.wake) waiter.wake();
    else waiter.woken = true;
  }
}

/** Adds `by` to `name`'s count, forgetting a count back at 0. */
function count(counts: Map<string, number>, name: string, by: number): void {
  const next = (counts.get(name) ?? 0) + by;
  if (next <= 0) counts.delete(name);
  else counts.set(name, next);
}
