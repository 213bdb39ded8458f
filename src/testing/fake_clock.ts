/**
 * A {@linkcode Clock} whose time only moves when a test says so.
 *
 * @module
 */

import { setImmediate } from "node:timers";
import { type Clock, sleepOn, type TimerId } from "../util/clock.ts";

interface FakeTimer {
  id: TimerId;
  due: number;
  fn: () => void;
}

/**
 * A deterministic {@linkcode Clock} for tests of anything that waits: work queues, rate
 * limiters, backoff, leader election. Time stands still until {@linkcode FakeClock.tick} or
 * {@linkcode FakeClock.tickAsync} moves it; no real time passes.
 *
 * Guarantees: timers fire in order of due time, timers due at the same time fire in the
 * order they were set, and `now()` equals a timer's due time while it runs. Timers set
 * while ticking fire in the same tick when they fall due within it.
 *
 * Caveats: use {@linkcode FakeClock.tickAsync} whenever the code under test continues in
 * promise callbacks (`await`); {@linkcode FakeClock.tick} runs timers back to back without
 * letting those continuations run.
 *
 * @example Advancing time by hand
 * ```ts
 * import { FakeClock } from "./fake_clock.ts";
 *
 * const clock = new FakeClock();
 * const fired: number[] = [];
 * clock.setTimeout(() => fired.push(clock.now()), 20);
 * clock.setTimeout(() => fired.push(clock.now()), 10);
 * clock.tick(15);
 * if (fired.join() !== "10") throw new Error(`Unexpected fired "${fired}"`);
 * clock.tick(5);
 * if (fired.join() !== "10,20") throw new Error(`Unexpected fired "${fired}"`);
 * ```
 *
 * @example Letting awaited code run between timers
 * ```ts
 * import { FakeClock } from "./fake_clock.ts";
 *
 * const clock = new FakeClock();
 * let steps = 0;
 * (async () => {
 *   await clock.sleep(10);
 *   steps++;
 *   await clock.sleep(10);
 *   steps++;
 * })();
 * await clock.tickAsync(20);
 * if (steps !== 2) throw new Error(`Expected 2 steps, got ${steps}`);
 * ```
 */
export class FakeClock implements Clock {
  #now: number;
  #nextId = 1;
  // Sorted by due time, then by id (insertion order).
  #timers: FakeTimer[] = [];

  /**
   * Creates a clock that stands at `startMs`.
   *
   * @param startMs The initial value of `now()`, in milliseconds since the Unix epoch.
   * @throws {RangeError} When `startMs` is not a finite number.
   */
  constructor(startMs = 0) {
    if (!Number.isFinite(startMs)) {
      throw new RangeError(`Cannot create FakeClock: startMs must be finite, got "${startMs}"`);
    }
    this.#now = startMs;
  }

  /**
   * The current fake time.
   *
   * @returns The current time in milliseconds.
   */
  now(): number {
    return this.#now;
  }

  /**
   * Schedules `fn` to run when the clock has advanced by `ms`.
   *
   * @param fn The callback to run.
   * @param ms The delay in milliseconds; negative or `NaN` means at the next tick.
   * @returns A handle for {@linkcode FakeClock.clearTimeout}.
   */
  setTimeout(fn: () => void, ms: number): TimerId {
    const delay = ms > 0 ? ms : 0;
    const timer: FakeTimer = { id: this.#nextId++, due: this.#now + delay, fn };
    // Binary search for the first timer due strictly later: equal due times keep set order.
    let lo = 0;
    let hi = this.#timers.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#timers[mid].due <= timer.due) lo = mid + 1;
      else hi = mid;
    }
    this.#timers.splice(lo, 0, timer);
    return timer.id;
  }

  /**
   * Cancels a timer; unknown or already fired handles are ignored.
   *
   * @param id The handle returned by {@linkcode FakeClock.setTimeout}.
   */
  clearTimeout(id: TimerId): void {
    const i = this.#timers.findIndex((t) => t.id === id);
    if (i >= 0) this.#timers.splice(i, 1);
  }

  /**
   * Resolves once the clock has advanced by `ms`, or rejects when `signal` aborts.
   *
   * @param ms The delay in milliseconds.
   * @param signal Cancels the wait.
   * @returns A promise that resolves when the fake time has passed.
   * @throws {unknown} The signal's reason when `signal` aborts first.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /**
   * The number of timers that have not fired or been cleared.
   *
   * @returns The count of pending timers.
   */
  get pending(): number {
    return this.#timers.length;
  }

  /**
   * The due time of the earliest pending timer.
   *
   * @returns Milliseconds since the epoch, or `undefined` when no timer is pending.
   */
  get nextDue(): number | undefined {
    return this.#timers[0]?.due;
  }

  /**
   * Advances the clock by `ms`, running every timer that falls due on the way, in order,
   * synchronously. Promise continuations do not run between timers; see
   * {@linkcode FakeClock.tickAsync}.
   *
   * @param ms How far to advance, in milliseconds.
   * @throws {RangeError} When `ms` is negative or not finite.
   * @throws {unknown} Whatever a timer callback throws; the clock then stands at that
   * timer's due time and later timers stay pending.
   */
  tick(ms: number): void {
    const target = this.#target(ms);
    for (let t = this.#popDue(target); t; t = this.#popDue(target)) t.fn();
    this.#now = target;
  }

  /**
   * Advances the clock by `ms` like {@linkcode FakeClock.tick}, but lets pending promise
   * continuations run before the first timer, between timers and at the end, so awaited
   * code that sets new timers takes part in the same tick.
   *
   * @param ms How far to advance, in milliseconds.
   * @returns A promise that resolves when the clock has reached the new time.
   * @throws {RangeError} When `ms` is negative or not finite.
   * @throws {unknown} Whatever a timer callback throws.
   */
  async tickAsync(ms: number): Promise<void> {
    const target = this.#target(ms);
    await FakeClock.runMicrotasks();
    for (let t = this.#popDue(target); t; t = this.#popDue(target)) {
      t.fn();
      await FakeClock.runMicrotasks();
    }
    this.#now = target;
    await FakeClock.runMicrotasks();
  }

  /**
   * Advances to the earliest pending timer and runs it (and any timer due at the same
   * moment), letting promise continuations run around them.
   *
   * @returns `true` when a timer ran, `false` when none was pending.
   */
  async nextAsync(): Promise<boolean> {
    const due = this.nextDue;
    if (due === undefined) return false;
    await this.tickAsync(due - this.#now);
    return true;
  }

  /**
   * Lets every queued promise continuation run, without advancing the clock. It yields
   * to the event loop once, which runs all microtasks but takes no measurable real time.
   *
   * @returns A promise that resolves after the microtask queue has drained.
   *
   * @example Flushing awaited work
   * ```ts
   * import { FakeClock } from "./fake_clock.ts";
   *
   * let done = false;
   * (async () => {
   *   for (let i = 0; i < 100; i++) await null;
   *   done = true;
   * })();
   * await FakeClock.runMicrotasks();
   * if (!done) throw new Error("Microtasks did not run");
   * ```
   */
  static runMicrotasks(): Promise<void> {
    // setTimeout(0) is clamped to milliseconds when nested; setImmediate is not.
    return new Promise((resolve) => setImmediate(resolve));
  }

  #target(ms: number): number {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`Cannot advance FakeClock: ms must be finite and >= 0, got "${ms}"`);
    }
    return this.#now + ms;
  }

  #popDue(target: number): FakeTimer | undefined {
    const first = this.#timers[0];
    if (first === undefined || first.due > target) return undefined;
    this.#timers.shift();
    if (first.due > this.#now) this.#now = first.due;
    return first;
  }
}
