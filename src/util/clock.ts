/**
 * The source of time for everything in kubeno that waits: work queues, rate limiters,
 * backoff, leader election. Production code uses {@linkcode realClock}; tests pass a
 * `FakeClock` (from `./fake_clock.ts`) and advance time by hand.
 *
 * @module
 */

/** An opaque handle returned by {@linkcode Clock.setTimeout}. */
export type TimerId = number;

/**
 * A clock that can tell the time and run callbacks later.
 *
 * Guarantees: `now()` never goes backwards for a given clock unless the system clock is
 * changed; a timer never fires before `now()` has reached its due time.
 *
 * @example Waiting on whichever clock was passed in
 * ```ts
 * import { type Clock, realClock } from "./clock.ts";
 *
 * async function pause(clock: Clock): Promise<number> {
 *   const start = clock.now();
 *   await clock.sleep(1);
 *   return clock.now() - start;
 * }
 * if ((await pause(realClock)) < 0) throw new Error("Time went backwards");
 * ```
 */
export interface Clock {
  /**
   * The current time in milliseconds since the Unix epoch.
   *
   * @returns The current time in milliseconds.
   */
  now(): number;
  /**
   * Runs `fn` once, `ms` milliseconds from now.
   *
   * @param fn The callback to run.
   * @param ms The delay in milliseconds; negative or `NaN` means as soon as possible.
   * @returns A handle for {@linkcode Clock.clearTimeout}.
   */
  setTimeout(fn: () => void, ms: number): TimerId;
  /**
   * Cancels a timer; unknown or already fired handles are ignored.
   *
   * @param id The handle returned by {@linkcode Clock.setTimeout}.
   */
  clearTimeout(id: TimerId): void;
  /**
   * Resolves after `ms` milliseconds, or rejects with `signal.reason` once `signal` aborts.
   *
   * @param ms The delay in milliseconds.
   * @param signal Cancels the wait.
   * @returns A promise that resolves when the time has passed.
   * @throws {unknown} The signal's reason when `signal` aborts first.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * Builds {@linkcode Clock.sleep} on top of a clock's own timers.
 *
 * @param clock The clock whose timers to use.
 * @param ms The delay in milliseconds.
 * @param signal Cancels the wait.
 * @returns A promise that resolves when the time has passed.
 * @throws {unknown} The signal's reason when `signal` aborts first.
 *
 * @example Sleeping on the real clock
 * ```ts
 * import { realClock, sleepOn } from "./clock.ts";
 *
 * await sleepOn(realClock, 1);
 * ```
 */
export function sleepOn(
  clock: Pick<Clock, "setTimeout" | "clearTimeout">,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clock.clearTimeout(id);
      reject(signal!.reason);
    };
    const id = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * The system clock: `Date.now()` and the global timers.
 *
 * @example Measuring elapsed time
 * ```ts
 * import { realClock } from "./clock.ts";
 *
 * const start = realClock.now();
 * await realClock.sleep(2);
 * if (realClock.now() < start) throw new Error("Time went backwards");
 * ```
 */
export const realClock: Clock = Object.freeze({
  now: () => Date.now(),
  // With Node types loaded the global's return type is Node's `Timeout`; in Deno it is a number.
  setTimeout: (fn: () => void, ms: number): TimerId => setTimeout(fn, ms) as unknown as TimerId,
  clearTimeout: (id: TimerId) => clearTimeout(id),
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(realClock, ms, signal);
  },
});
