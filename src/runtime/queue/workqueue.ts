/**
 * The work queue between informers and reconcilers: highest priority first and FIFO within
 * one, de-duplicating, one worker per key at a time, with delayed and rate-limited adds, and
 * a drain on shutdown. Modelled on client-go's `util/workqueue` and, for priorities, on
 * controller-runtime's priority queue (`pkg/controller/priorityqueue`).
 *
 * @module
 */

import { type Clock, realClock, type TimerId } from "../../util/clock.ts";
import { defaultControllerRateLimiter, type RateLimiter } from "./rate_limiter.ts";
import { ReadyQueue } from "./_ready_queue.ts";

/**
 * The priority of keys that are not news: the initial list, resyncs and hand-offs, so that
 * real changes are served before them. The same value as controller-runtime's
 * `handler.LowPriority`.
 */
export const LOW_PRIORITY: number = -100;

/** The priority of an add that names none. */
export const DEFAULT_PRIORITY: number = 0;

/**
 * Callbacks a {@linkcode WorkQueue} makes so that metrics can be kept outside it. Each maps
 * to one controller-runtime metric, named in its doc. Durations are in seconds. Hooks run
 * synchronously inside queue operations, after the queue's state has changed; they must
 * be cheap and must not throw.
 *
 * @typeParam K The key type of the queue.
 *
 * @example Counting adds and tracking depth
 * ```ts
 * import { WorkQueue } from "./workqueue.ts";
 *
 * let adds = 0;
 * let depth = 0;
 * const queue = new WorkQueue<string>({
 *   name: "apps",
 *   metrics: { add: () => adds++, depth: (n) => depth = n },
 * });
 * queue.add("default/a");
 * queue.add("default/a");
 * queue.add("default/b");
 * if (adds !== 2 || depth !== 2) throw new Error(`Unexpected adds ${adds}, depth ${depth}`);
 * ```
 */
export interface WorkQueueMetrics<K> {
  /**
   * A key became dirty (it was not already waiting), at `priority`: `workqueue_adds_total`.
   * A waiting key whose priority rose is not counted again.
   */
  add?(key: K, priority?: number): void;
  /**
   * The number of dirty keys at `priority` changed to `depth`: `workqueue_depth`, with the
   * `priority` label as in controller-runtime's priority queue. The queue's depth is the
   * sum over priorities; a hook that ignores `priority` sees it only while one priority is
   * in use (as with `priorities: false`, where every key is at `0`).
   */
  depth?(depth: number, priority?: number): void;
  /** `key` waited `seconds` between its add and a worker getting it: `workqueue_queue_duration_seconds`. */
  queueDuration?(seconds: number, key: K): void;
  /** A worker held `key` for `seconds` before `done`: `workqueue_work_duration_seconds`. */
  workDuration?(seconds: number, key: K): void;
  /** `key` was added with a delay (`addAfter`, `addRateLimited`): `workqueue_retries_total`. */
  retry?(key: K): void;
  /**
   * Reported periodically while keys are being processed, and once with zeros when none are
   * left: the summed age of all in-flight work (`workqueue_unfinished_work_seconds`) and the
   * age of the oldest (`workqueue_longest_running_processor_seconds`).
   */
  unfinishedWork?(unfinishedSeconds: number, longestRunningSeconds: number): void;
}

/** Options for {@linkcode WorkQueue}. */
export interface WorkQueueOptions<K> {
  /**
   * A name for the queue, for metrics labels and messages.
   *
   * @default {""}
   */
  name?: string;
  /**
   * The clock for delayed adds and metrics.
   *
   * @default {realClock}
   */
  clock?: Clock;
  /**
   * Decides the delay of {@linkcode WorkQueue.addRateLimited}.
   *
   * @default {defaultControllerRateLimiter({ clock })}
   */
  rateLimiter?: RateLimiter<K>;
  /** Hooks that feed metrics. */
  metrics?: WorkQueueMetrics<K>;
  /**
   * Whether adds' priorities order the queue. `false` treats every priority as
   * {@linkcode DEFAULT_PRIORITY}: one FIFO, as client-go's work queue.
   *
   * @default {true}
   */
  priorities?: boolean;
  /**
   * How often {@linkcode WorkQueueMetrics.unfinishedWork} is called while work is in flight,
   * in milliseconds.
   *
   * @default {500}
   */
  unfinishedWorkPeriodMs?: number;
}

/** Options for {@linkcode WorkQueue.add}, {@linkcode WorkQueue.addAfter} and {@linkcode WorkQueue.addRateLimited}. */
export interface WorkQueueAddOptions {
  /**
   * The key's priority, a finite number: higher is served first. A key that is already
   * waiting keeps the higher of its priorities. Use {@linkcode LOW_PRIORITY} for keys that
   * are not news (the initial list, resyncs).
   *
   * @default {DEFAULT_PRIORITY}
   */
  priority?: number;
}

/** What {@linkcode WorkQueue.get} resolves to: a key to process, or the end of the queue. */
export type WorkQueueItem<K> = { key: K; shutdown: false } | { key: undefined; shutdown: true };

/** Options for {@linkcode WorkQueue.get}. */
export interface WorkQueueGetOptions {
  /** Stops waiting; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Take only a key at this priority or higher: while every queued key is below it, the
   * caller waits (or, once the queue is shutting down, gets `{ shutdown: true }`, leaving
   * those keys to other workers). A worker kept for real changes passes
   * {@linkcode DEFAULT_PRIORITY}, so that keys at {@linkcode LOW_PRIORITY} never hold it.
   *
   * @default {-Infinity}
   */
  minPriority?: number;
}

interface Getter<K> {
  min: number;
  resolve(item: WorkQueueItem<K>): void;
  detach(): void;
}

interface Delayed<K> {
  key: K;
  readyAt: number;
  seq: number;
  priority: number;
}

const SHUTDOWN: WorkQueueItem<never> = Object.freeze({ key: undefined, shutdown: true });

/**
 * A work queue of keys, generic in the key type (compared with `SameValueZero`, so use
 * strings such as `namespace/name` rather than objects).
 *
 * Flow: producers `add` keys (now, after a delay, or after a rate-limited delay), each at a
 * priority; workers `get` a key, process it, then call `done(key)`; a worker that failed
 * calls `addRateLimited(key)` before `done`, and one that succeeded calls `forget(key)`.
 *
 * Guarantees:
 * - Highest priority first, FIFO within one: `get` hands out the waiting key of the highest
 *   priority, and of those the one added first; waiting workers are served in the order
 *   they called `get`. With `priorities: false` every key is at one priority: plain FIFO.
 *   A `get` with `minPriority` takes the first key at or above it and waits past lower
 *   ones, which stay for other workers.
 * - De-duplicating: a key added many times before a worker gets it is handed out once, at
 *   the highest priority it was added with. A key whose priority rises goes to the back of
 *   its new priority's FIFO (as in controller-runtime); otherwise it keeps its place.
 * - One worker per key: a key is never handed out again until `done(key)`. If it is added
 *   while being processed it is queued again on `done`, at the highest priority it was
 *   added with meanwhile, so no change is lost.
 * - Delayed adds: `addAfter` adds the key at its priority when the delay has passed; when a
 *   key is already waiting for a delayed add, the earlier time and the higher priority win.
 * - Shutdown: after `shutDown` adds are ignored, delayed adds are dropped, keys already
 *   queued are still handed out, and once none are left `get` resolves
 *   `{ shutdown: true }`. `shutDownWithDrain` also waits until every key handed out is done.
 *
 * Assumptions: every key returned by `get` is eventually passed to `done`; a queue uses a
 * few distinct priorities (each costs a little on its first use).
 *
 * Caveats: the queue holds a timer only while delayed keys wait or (with the
 * `unfinishedWork` hook) while keys are processed; call `shutDown` to drop those. A delayed
 * add does not touch the key while it waits: it neither raises the priority of the key
 * already queued nor is absorbed by it (controller-runtime's priority queue does both).
 *
 * Errors: `add`, `addAfter` and `addRateLimited` throw `RangeError` for a priority that is
 * not a finite number, `addAfter` also for a delay that is not one.
 *
 * @typeParam K The key type.
 *
 * @example A worker loop
 * ```ts
 * import { WorkQueue } from "./workqueue.ts";
 *
 * const queue = new WorkQueue<string>({ name: "apps" });
 * queue.add("default/a");
 * queue.add("default/b");
 * queue.add("default/a"); // de-duplicated
 * const seen: string[] = [];
 * const worker = (async () => {
 *   for await (const key of queue) {
 *     try {
 *       seen.push(key);
 *       queue.forget(key);
 *     } finally {
 *       queue.done(key);
 *     }
 *   }
 * })();
 * await queue.shutDownWithDrain();
 * await worker;
 * if (seen.join() !== "default/a,default/b") throw new Error(`Unexpected keys "${seen}"`);
 * ```
 *
 * @example Changes before the initial list
 * ```ts
 * import { LOW_PRIORITY, WorkQueue } from "./workqueue.ts";
 *
 * const queue = new WorkQueue<string>();
 * queue.add("default/a", { priority: LOW_PRIORITY }); // from the initial list
 * queue.add("default/b", { priority: LOW_PRIORITY });
 * queue.add("default/c"); // a change: default priority 0
 * queue.add("default/b"); // changed too: rises to 0, behind default/c
 * if (queue.waiting().join() !== "default/c,default/b,default/a") {
 *   throw new Error(`Unexpected order "${queue.waiting()}"`);
 * }
 * ```
 */
export class WorkQueue<K = string> implements AsyncDisposable, AsyncIterable<K> {
  #name: string;
  #clock: Clock;
  #rateLimiter: RateLimiter<K>;
  #metrics?: WorkQueueMetrics<K>;
  #periodMs: number;
  #priorities: boolean;
  // Keys ready for a worker, by priority.
  #ready = new ReadyQueue<K>();
  // Keys that need processing (the queued ones and those re-added while being processed),
  // with the time they became dirty (0 without metrics).
  #dirty = new Map<K, number>();
  // The priority of each dirty key that is not at DEFAULT_PRIORITY: sparse, so that a
  // queue without priorities costs no more than a plain FIFO.
  #priorityOf = new Map<K, number>();
  // With a depth hook: the number of dirty keys at DEFAULT_PRIORITY (nearly every key), and
  // per other priority in a map, so the common count costs no map lookup.
  #defaultDepth = 0;
  #depths = new Map<number, number>();
  // Keys handed to a worker and not yet done, with the time they were handed out.
  #processing = new Map<K, number>();
  #getters: Getter<K>[] = [];
  #drainers: (() => void)[] = [];
  #shuttingDown = false;
  // Delayed adds: a min-heap by (readyAt, seq). #waiting holds each key's live entry;
  // heap entries that are not live were superseded by an earlier addAfter.
  #heap: Delayed<K>[] = [];
  #waiting = new Map<K, Delayed<K>>();
  #seq = 0;
  #delayTimer?: TimerId;
  #delayTimerDue = Infinity;
  #unfinishedTimer?: TimerId;

  /**
   * Creates an empty queue.
   *
   * @param options Name, clock, rate limiter, metrics hooks and whether priorities count.
   * @throws {RangeError} When `unfinishedWorkPeriodMs` is not a positive finite number.
   */
  constructor(options: WorkQueueOptions<K> = {}) {
    this.#name = options.name ?? "";
    this.#clock = options.clock ?? realClock;
    this.#rateLimiter = options.rateLimiter ??
      defaultControllerRateLimiter<K>({ clock: this.#clock });
    this.#metrics = options.metrics;
    this.#priorities = options.priorities ?? true;
    this.#periodMs = options.unfinishedWorkPeriodMs ?? 500;
    if (!(this.#periodMs > 0 && this.#periodMs < Infinity)) {
      throw new RangeError(
        `Cannot create work queue "${this.#name}": unfinishedWorkPeriodMs must be > 0 and finite, got "${this.#periodMs}"`,
      );
    }
  }

  /**
   * The queue's name.
   *
   * @returns The name given in the options.
   */
  get name(): string {
    return this.#name;
  }

  /**
   * Whether {@linkcode WorkQueue.shutDown} has been called.
   *
   * @returns `true` once the queue is shutting down.
   */
  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /**
   * The number of keys waiting for a worker, not counting keys re-added while processed.
   *
   * @returns The queue length.
   */
  len(): number {
    return this.#ready.size;
  }

  /**
   * The keys waiting for a worker, in the order {@linkcode WorkQueue.get} hands them out
   * (what {@linkcode WorkQueue.len} counts).
   *
   * @returns A copy.
   */
  waiting(): K[] {
    const keys: K[] = [];
    for (const key of this.#ready) keys.push(key);
    return keys;
  }

  /**
   * Marks `key` as needing processing. Does nothing if the queue is shutting down; a key
   * already waiting keeps its place unless `priority` is higher than its own, which moves
   * it to the back of that priority's keys; a key being processed is queued again on
   * `done`.
   *
   * @param key The key to add.
   * @param options The key's priority.
   * @throws {RangeError} When `priority` is not a finite number.
   *
   * @example Priorities and de-duplication
   * ```ts
   * import { WorkQueue } from "./workqueue.ts";
   *
   * const queue = new WorkQueue<string>();
   * queue.add("default/a");
   * queue.add("default/b", { priority: 10 });
   * queue.add("default/a", { priority: -5 }); // keeps 0, the higher
   * const first = await queue.get();
   * if (first.key !== "default/b") throw new Error(`Got "${first.key}" first`);
   * queue.done(first.key);
   * ```
   */
  add(key: K, options?: WorkQueueAddOptions): void {
    if (options === undefined) {
      // The plain FIFO path, kept as short as before priorities.
      if (this.#shuttingDown || (this.#priorityOf.size === 0 && this.#dirty.has(key))) return;
      return this.#add(key, DEFAULT_PRIORITY);
    }
    const priority = this.#priority(options, "add");
    if (!this.#shuttingDown) this.#add(key, priority);
  }

  /**
   * Adds `key` once `ms` milliseconds have passed, at `priority`. If the key is already
   * waiting for a delayed add, the earlier of the two times and the higher of the two
   * priorities are kept.
   *
   * @param key The key to add.
   * @param ms The delay in milliseconds; `0` or less adds at once.
   * @param options The key's priority once the delay has passed.
   * @throws {RangeError} When `ms` or `priority` is not a finite number.
   *
   * @example Requeueing after a fixed time
   * ```ts
   * import { WorkQueue } from "./workqueue.ts";
   * import { FakeClock } from "../../testing/fake_clock.ts";
   *
   * const clock = new FakeClock();
   * const queue = new WorkQueue<string>({ clock });
   * queue.addAfter("default/a", 5_000);
   * queue.addAfter("default/a", 1_000); // earlier wins
   * clock.tick(999);
   * if (queue.len() !== 0) throw new Error("Added too early");
   * clock.tick(1);
   * if (queue.len() !== 1) throw new Error("Not added after 1 s");
   * ```
   *
   * @example A delayed add keeps the higher priority
   * ```ts
   * import { WorkQueue } from "./workqueue.ts";
   * import { FakeClock } from "../../testing/fake_clock.ts";
   *
   * const clock = new FakeClock();
   * const queue = new WorkQueue<string>({ clock });
   * queue.addAfter("default/a", 1_000, { priority: 5 });
   * queue.addAfter("default/a", 2_000); // later and lower: changes nothing
   * queue.addAfter("default/b", 1_000);
   * clock.tick(1_000);
   * if (queue.waiting().join() !== "default/a,default/b") throw new Error(`${queue.waiting()}`);
   * ```
   */
  addAfter(key: K, ms: number, options?: WorkQueueAddOptions): void {
    if (!Number.isFinite(ms)) {
      throw new RangeError(
        `Cannot add to work queue "${this.#name}" after delay: ms must be finite, got "${ms}"`,
      );
    }
    const priority = options === undefined ? DEFAULT_PRIORITY : this.#priority(options, "add");
    if (!this.#shuttingDown) this.#addAfter(key, ms, priority);
  }

  /**
   * Adds `key` after the delay the rate limiter decides, at `priority`, counting one more
   * retry of it.
   *
   * @param key The key to retry.
   * @param options The key's priority once the delay has passed.
   * @throws {RangeError} When `priority` is not a finite number.
   *
   * @example Retrying with backoff, resetting on success
   * ```ts
   * import { WorkQueue } from "./workqueue.ts";
   * import { FakeClock } from "../../testing/fake_clock.ts";
   *
   * const clock = new FakeClock();
   * const queue = new WorkQueue<string>({ clock });
   * queue.addRateLimited("default/a"); // first retry: 5 ms
   * clock.tick(5);
   * const item = await queue.get();
   * if (item.key !== "default/a") throw new Error("Not retried");
   * if (queue.numRequeues("default/a") !== 1) throw new Error("Retry not counted");
   * queue.forget("default/a"); // reconciled: next failure starts again at 5 ms
   * queue.done("default/a");
   * ```
   */
  addRateLimited(key: K, options?: WorkQueueAddOptions): void {
    const priority = options === undefined ? DEFAULT_PRIORITY : this.#priority(options, "add");
    if (this.#shuttingDown) return;
    this.#addAfter(key, this.#rateLimiter.when(key), priority);
  }

  /**
   * Tells the rate limiter that `key` succeeded (or was given up on), resetting its backoff.
   *
   * @param key The key to forget.
   */
  forget(key: K): void {
    this.#rateLimiter.forget(key);
  }

  /**
   * How many times `key` has been retried through {@linkcode WorkQueue.addRateLimited}
   * since it was last forgotten.
   *
   * @param key The key to look up.
   * @returns The retry count.
   */
  numRequeues(key: K): number {
    return this.#rateLimiter.numRequeues(key);
  }

  /**
   * Waits for a key to process: the waiting key of the highest priority, first added among
   * those. The key stays reserved for the caller until {@linkcode WorkQueue.done} is called
   * with it.
   *
   * @param options An abort signal to stop waiting.
   * @returns The next key, or `{ shutdown: true }` once the queue is shut down and empty.
   * @throws {unknown} The signal's reason when `signal` aborts while waiting.
   * @throws {RangeError} When `minPriority` is `NaN`.
   *
   * @example Waiting for work with a timeout
   * ```ts
   * import { WorkQueue } from "./workqueue.ts";
   *
   * const queue = new WorkQueue<string>();
   * try {
   *   await queue.get({ signal: AbortSignal.timeout(1) });
   *   throw new Error("Got a key from an empty queue");
   * } catch (error) {
   *   if ((error as Error).name !== "TimeoutError") throw error;
   * }
   * ```
   */
  get(options: WorkQueueGetOptions = {}): Promise<WorkQueueItem<K>> {
    const { signal, minPriority: min = -Infinity } = options;
    if (Number.isNaN(min)) {
      throw new RangeError(
        `Cannot get from work queue "${this.#name}": minPriority must be a number, got "NaN"`,
      );
    }
    if (this.#ready.size > 0 && this.#ready.topPriority! >= min) {
      return Promise.resolve({ key: this.#start(this.#ready.shift()!), shutdown: false });
    }
    if (this.#shuttingDown) return Promise.resolve(SHUTDOWN);
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.#getters.indexOf(getter);
        if (i >= 0) this.#getters.splice(i, 1);
        reject(signal!.reason);
      };
      const getter: Getter<K> = {
        min,
        resolve,
        detach: () => signal?.removeEventListener("abort", onAbort),
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#getters.push(getter);
    });
  }

  /**
   * Releases `key` after processing. If it was added again meanwhile it is queued again, at
   * the highest priority it was added with meanwhile. Calling it for a key that is not
   * being processed does nothing.
   *
   * @param key A key returned by {@linkcode WorkQueue.get}.
   */
  done(key: K): void {
    const started = this.#processing.get(key);
    if (started === undefined) return;
    this.#processing.delete(key);
    if (this.#dirty.has(key)) this.#push(key, this.#priorityOf.get(key) ?? DEFAULT_PRIORITY);
    this.#metrics?.workDuration?.((this.#clock.now() - started) / 1000, key);
    if (this.#processing.size === 0) {
      if (this.#unfinishedTimer !== undefined) {
        this.#clock.clearTimeout(this.#unfinishedTimer);
        this.#unfinishedTimer = undefined;
        this.#metrics?.unfinishedWork?.(0, 0);
      }
      const drainers = this.#drainers;
      this.#drainers = [];
      for (const resolve of drainers) resolve();
    }
  }

  /**
   * Stops accepting keys: later adds are ignored, delayed adds are dropped, and waiting
   * and later `get` calls resolve `{ shutdown: true }` once the queued keys are handed out.
   * Calling it again does nothing.
   */
  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    if (this.#delayTimer !== undefined) this.#clock.clearTimeout(this.#delayTimer);
    this.#delayTimer = undefined;
    this.#delayTimerDue = Infinity;
    this.#heap = [];
    this.#waiting.clear();
    // Getters only wait while no key they take is queued, so all of them are told to stop.
    const getters = this.#getters;
    this.#getters = [];
    for (const getter of getters) {
      getter.detach();
      getter.resolve(SHUTDOWN);
    }
  }

  /**
   * Shuts the queue down and waits until every key handed to a worker is done.
   *
   * @returns A promise that resolves when no key is being processed.
   *
   * @example Finishing in-flight work on shutdown
   * ```ts
   * import { WorkQueue } from "./workqueue.ts";
   *
   * const queue = new WorkQueue<string>();
   * queue.add("default/a");
   * const { key } = await queue.get();
   * let finished = false;
   * setTimeout(() => {
   *   finished = true;
   *   queue.done(key!);
   * }, 1);
   * await queue.shutDownWithDrain();
   * if (!finished) throw new Error("Drain did not wait");
   * queue.add("default/b"); // ignored
   * if (queue.len() !== 0) throw new Error("Accepted a key after shutdown");
   * ```
   */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainers.push(resolve));
  }

  /**
   * Same as {@linkcode WorkQueue.shutDownWithDrain}, for `await using`.
   *
   * @returns A promise that resolves when no key is being processed.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.shutDownWithDrain();
  }

  /**
   * Yields keys from {@linkcode WorkQueue.get} until the queue shuts down. The loop body
   * must call {@linkcode WorkQueue.done} for each key.
   *
   * @returns An async iterator of keys.
   */
  async *[Symbol.asyncIterator](): AsyncIterator<K> {
    while (true) {
      const item = await this.get();
      if (item.shutdown) return;
      yield item.key;
    }
  }

  // Checks an add's priority and applies `priorities: false`.
  #priority(options: WorkQueueAddOptions, action: string): number {
    const { priority = DEFAULT_PRIORITY } = options;
    if (!Number.isFinite(priority)) {
      throw new RangeError(
        `Cannot ${action} to work queue "${this.#name}": priority must be a finite number, got "${priority}"`,
      );
    }
    return this.#priorities ? priority : DEFAULT_PRIORITY;
  }

  #add(key: K, priority: number): void {
    if (this.#dirty.has(key)) {
      const priorities = this.#priorityOf;
      if (priorities.size === 0 && priority <= DEFAULT_PRIORITY) return;
      const current = priorities.get(key) ?? DEFAULT_PRIORITY;
      if (priority > current) this.#raise(key, current, priority);
      return;
    }
    const metrics = this.#metrics;
    this.#dirty.set(key, metrics ? this.#clock.now() : 0);
    if (priority !== DEFAULT_PRIORITY) this.#priorityOf.set(key, priority);
    if (metrics !== undefined) {
      metrics.add?.(key, priority);
      if (metrics.depth) this.#countDepth(priority, 1);
    }
    if (!this.#processing.has(key)) this.#push(key, priority);
  }

  // A dirty key asked for at a higher priority: a queued one moves to the back of that
  // priority's FIFO; for one being processed, the priority is kept for its `done`.
  #raise(key: K, old: number, priority: number): void {
    if (priority === DEFAULT_PRIORITY) this.#priorityOf.delete(key);
    else this.#priorityOf.set(key, priority);
    if (this.#metrics?.depth) {
      this.#countDepth(old, -1);
      this.#countDepth(priority, 1);
    }
    if (!this.#processing.has(key)) {
      this.#ready.remove(key, old);
      // A worker that waits for keys of this priority takes it at once.
      this.#push(key, priority);
    }
  }

  #addAfter(key: K, ms: number, priority: number): void {
    this.#metrics?.retry?.(key);
    if (ms <= 0) return this.#add(key, priority);
    const readyAt = this.#clock.now() + ms;
    const existing = this.#waiting.get(key);
    if (existing !== undefined) {
      // Only the time orders the heap, so a priority can rise in place.
      if (existing.readyAt <= readyAt) {
        existing.priority = Math.max(existing.priority, priority);
        return;
      }
      priority = Math.max(existing.priority, priority);
    }
    const entry: Delayed<K> = { key, readyAt, seq: this.#seq++, priority };
    this.#waiting.set(key, entry);
    heapPush(this.#heap, entry);
    this.#armDelayTimer();
  }

  #countDepth(priority: number, delta: number): void {
    if (priority === DEFAULT_PRIORITY) {
      this.#metrics!.depth!(this.#defaultDepth += delta, priority);
      return;
    }
    const depth = (this.#depths.get(priority) ?? 0) + delta;
    if (depth === 0) this.#depths.delete(priority);
    else this.#depths.set(priority, depth);
    this.#metrics!.depth!(depth, priority);
  }

  // Queues a dirty key that is not being processed, or hands it to the first waiting getter
  // that takes its priority.
  #push(key: K, priority: number): void {
    const getters = this.#getters;
    let i = 0;
    while (i < getters.length && getters[i].min > priority) i++;
    if (i === getters.length) {
      this.#ready.push(key, priority);
      return;
    }
    // A getter only waits while no key at or above its minimum is queued, so handing over
    // directly keeps order.
    const getter = i === 0 ? getters.shift()! : getters.splice(i, 1)[0];
    getter.detach();
    getter.resolve({ key: this.#start(key), shutdown: false });
  }

  // Moves a key from dirty to processing.
  #start(key: K): K {
    const addedAt = this.#dirty.get(key)!;
    this.#dirty.delete(key);
    let priority = DEFAULT_PRIORITY;
    if (this.#priorityOf.size > 0) {
      priority = this.#priorityOf.get(key) ?? DEFAULT_PRIORITY;
      this.#priorityOf.delete(key);
    }
    const metrics = this.#metrics;
    if (metrics === undefined) {
      this.#processing.set(key, 0);
      return key;
    }
    const now = this.#clock.now();
    this.#processing.set(key, now);
    if (metrics.depth) this.#countDepth(priority, -1);
    metrics.queueDuration?.((now - addedAt) / 1000, key);
    if (metrics.unfinishedWork && this.#unfinishedTimer === undefined) {
      this.#unfinishedTimer = this.#clock.setTimeout(this.#reportUnfinished, this.#periodMs);
    }
    return key;
  }

  #reportUnfinished = (): void => {
    this.#unfinishedTimer = undefined;
    if (this.#processing.size === 0) return;
    const now = this.#clock.now();
    let total = 0;
    let longest = 0;
    for (const started of this.#processing.values()) {
      total += now - started;
      longest = Math.max(longest, now - started);
    }
    this.#unfinishedTimer = this.#clock.setTimeout(this.#reportUnfinished, this.#periodMs);
    this.#metrics?.unfinishedWork?.(total / 1000, longest / 1000);
  };

  // Drops superseded entries from the top of the heap and returns the earliest live one.
  #peekDelayed(): Delayed<K> | undefined {
    const heap = this.#heap;
    while (heap.length > 0 && this.#waiting.get(heap[0].key) !== heap[0]) heapPop(heap);
    return heap[0];
  }

  #armDelayTimer(): void {
    const next = this.#peekDelayed();
    const due = next?.readyAt ?? Infinity;
    if (due === this.#delayTimerDue) return;
    if (this.#delayTimer !== undefined) this.#clock.clearTimeout(this.#delayTimer);
    this.#delayTimer = undefined;
    this.#delayTimerDue = due;
    if (next === undefined) return;
    this.#delayTimer = this.#clock.setTimeout(this.#onDelayTimer, due - this.#clock.now());
  }

  #onDelayTimer = (): void => {
    this.#delayTimer = undefined;
    this.#delayTimerDue = Infinity;
    const now = this.#clock.now();
    for (let next = this.#peekDelayed(); next && next.readyAt <= now; next = this.#peekDelayed()) {
      heapPop(this.#heap);
      this.#waiting.delete(next.key);
      this.#add(next.key, next.priority);
    }
    this.#armDelayTimer();
  };
}

function before<K>(a: Delayed<K>, b: Delayed<K>): boolean {
  return a.readyAt < b.readyAt || (a.readyAt === b.readyAt && a.seq < b.seq);
}

function heapPush<K>(heap: Delayed<K>[], entry: Delayed<K>): void {
  let i = heap.push(entry) - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(heap[i], heap[parent])) break;
    [heap[i], heap[parent]] = [heap[parent], heap[i]];
    i = parent;
  }
}

function heapPop<K>(heap: Delayed<K>[]): void {
  const last = heap.pop()!;
  if (heap.length === 0) return;
  heap[0] = last;
  for (let i = 0;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let min = i;
    if (l < heap.length && before(heap[l], heap[min])) min = l;
    if (r < heap.length && before(heap[r], heap[min])) min = r;
    if (min === i) return;
    [heap[i], heap[min]] = [heap[min], heap[i]];
    i = min;
  }
}
