/**
 * Rate limiters decide how long a key waits before it is retried: per key with
 * exponential backoff, overall with a token bucket, or the worst of several. The
 * semantics match client-go's `util/workqueue` rate limiters.
 *
 * @module
 */

import { type Clock, realClock } from "../../util/clock.ts";

/**
 * Decides how long a key must wait before it is processed again.
 *
 * @typeParam K The key type; keys are compared with `SameValueZero`, as `Map` does.
 *
 * @example A limiter that always waits one second
 * ```ts
 * import type { RateLimiter } from "./rate_limiter.ts";
 *
 * const counts = new Map<string, number>();
 * const fixed: RateLimiter<string> = {
 *   when(key) {
 *     counts.set(key, (counts.get(key) ?? 0) + 1);
 *     return 1_000;
 *   },
 *   forget: (key) => void counts.delete(key),
 *   numRequeues: (key) => counts.get(key) ?? 0,
 * };
 * if (fixed.when("a") !== 1_000 || fixed.numRequeues("a") !== 1) throw new Error("Broken");
 * ```
 */
export interface RateLimiter<K> {
  /**
   * Records one more retry of `key` and returns how long it should wait.
   *
   * @param key The key about to be retried.
   * @returns The delay in milliseconds, `0` for none.
   */
  when(key: K): number;
  /**
   * Stops tracking `key`, after it succeeded or was given up on.
   *
   * @param key The key to forget.
   */
  forget(key: K): void;
  /**
   * How many times `key` has been retried since it was last forgotten.
   *
   * @param key The key to look up.
   * @returns The retry count.
   */
  numRequeues(key: K): number;
}

/** Options for {@linkcode exponentialRateLimiter}. */
export interface ExponentialRateLimiterOptions {
  /**
   * The delay of the first retry, in milliseconds; each further retry doubles it.
   *
   * @default {5}
   */
  baseDelayMs?: number;
  /**
   * The largest delay ever returned, in milliseconds.
   *
   * @default {1_000_000}
   */
  maxDelayMs?: number;
}

/**
 * A per-key exponential backoff: the n-th retry of a key (counting from 0) waits
 * `baseDelayMs * 2^n`, capped at `maxDelayMs`, until the key is forgotten. Like client-go's
 * `ItemExponentialFailureRateLimiter`.
 *
 * @typeParam K The key type.
 * @param options The base and maximum delays.
 * @returns A rate limiter tracking failures per key.
 * @throws {RangeError} When a delay is negative or not finite, or `baseDelayMs` exceeds
 * `maxDelayMs`.
 *
 * @example Backoff doubling from 5 ms
 * ```ts
 * import { exponentialRateLimiter } from "./rate_limiter.ts";
 *
 * const limiter = exponentialRateLimiter<string>();
 * const delays = [1, 2, 3, 4].map(() => limiter.when("default/app"));
 * if (delays.join() !== "5,10,20,40") throw new Error(`Unexpected delays "${delays}"`);
 * limiter.forget("default/app");
 * if (limiter.when("default/app") !== 5) throw new Error("Forget did not reset");
 * ```
 */
export function exponentialRateLimiter<K>(
  options: ExponentialRateLimiterOptions = {},
): RateLimiter<K> {
  const { baseDelayMs = 5, maxDelayMs = 1_000_000 } = options;
  checkDelay("baseDelayMs", baseDelayMs);
  checkDelay("maxDelayMs", maxDelayMs);
  if (baseDelayMs > maxDelayMs) {
    throw new RangeError(
      `Cannot create exponential rate limiter: baseDelayMs "${baseDelayMs}" exceeds maxDelayMs "${maxDelayMs}"`,
    );
  }
  const failures = new Map<K, number>();
  return {
    when(key) {
      const exp = failures.get(key) ?? 0;
      failures.set(key, exp + 1);
      if (baseDelayMs === 0) return 0; // 0 * 2 ** 1024 would be NaN
      // 2 ** exp overflows to Infinity, which the cap absorbs.
      const delay = baseDelayMs * 2 ** exp;
      return delay > maxDelayMs ? maxDelayMs : delay;
    },
    forget(key) {
      failures.delete(key);
    },
    numRequeues(key) {
      return failures.get(key) ?? 0;
    },
  };
}

/** Options for {@linkcode bucketRateLimiter}. */
export interface BucketRateLimiterOptions {
  /**
   * Tokens added to the bucket per second: the sustained rate. `Infinity` disables limiting.
   *
   * @default {10}
   */
  qps?: number;
  /**
   * The bucket's capacity: how many calls may pass at once. The bucket starts full.
   *
   * @default {100}
   */
  burst?: number;
  /**
   * The clock that measures refills.
   *
   * @default {realClock}
   */
  clock?: Clock;
}

/**
 * An overall token bucket shared by all keys, like client-go's `BucketRateLimiter` over
 * `golang.org/x/time/rate`. Each `when` reserves one token: while the bucket holds one it
 * returns `0`; otherwise the bucket goes into debt and the delay is the time until the
 * debt is repaid, so reservations queue up `1000 / qps` ms apart. `forget` does nothing
 * and `numRequeues` is always `0`.
 *
 * @typeParam K The key type.
 * @param options The rate, burst and clock.
 * @returns A rate limiter that limits the overall rate.
 * @throws {RangeError} When `qps` is not positive or `burst` is not a positive integer.
 *
 * @example A burst of 2 then one per 100 ms
 * ```ts
 * import { bucketRateLimiter } from "./rate_limiter.ts";
 * import { FakeClock } from "../../testing/fake_clock.ts";
 *
 * const clock = new FakeClock();
 * const limiter = bucketRateLimiter<string>({ qps: 10, burst: 2, clock });
 * const delays = ["a", "b", "c", "d"].map((key) => limiter.when(key));
 * if (delays.join() !== "0,0,100,200") throw new Error(`Unexpected delays "${delays}"`);
 * ```
 */
export function bucketRateLimiter<K>(options: BucketRateLimiterOptions = {}): RateLimiter<K> {
  const { qps = 10, burst = 100, clock = realClock } = options;
  if (!(qps > 0)) {
    throw new RangeError(`Cannot create bucket rate limiter: qps must be > 0, got "${qps}"`);
  }
  if (!Number.isInteger(burst) || burst < 1) {
    throw new RangeError(
      `Cannot create bucket rate limiter: burst must be an integer >= 1, got "${burst}"`,
    );
  }
  let tokens = burst;
  let last = clock.now();
  return {
    when() {
      if (qps === Infinity) return 0;
      const now = clock.now();
      // A clock that stepped backwards refills nothing.
      const elapsedMs = now > last ? now - last : 0;
      tokens = Math.min(burst, tokens + (elapsedMs * qps) / 1000);
      last = now;
      tokens -= 1;
      return tokens >= 0 ? 0 : (-tokens * 1000) / qps;
    },
    forget() {},
    numRequeues() {
      return 0;
    },
  };
}

/**
 * Combines limiters: `when` asks every one (so each records the retry) and returns the
 * longest delay, `numRequeues` the highest count, and `forget` forgets in all of them.
 * Like client-go's `MaxOfRateLimiter`.
 *
 * @typeParam K The key type.
 * @param limiters The limiters to combine.
 * @returns A rate limiter returning the worst case of `limiters`.
 * @throws {TypeError} When no limiter is given.
 *
 * @example Backoff per key, bucket overall
 * ```ts
 * import { bucketRateLimiter, exponentialRateLimiter, maxOfRateLimiter } from "./rate_limiter.ts";
 * import { FakeClock } from "../../testing/fake_clock.ts";
 *
 * const clock = new FakeClock();
 * const limiter = maxOfRateLimiter<string>(
 *   exponentialRateLimiter({ baseDelayMs: 50 }),
 *   bucketRateLimiter({ qps: 1, burst: 1, clock }),
 * );
 * const delays = [limiter.when("a"), limiter.when("b")];
 * if (delays.join() !== "50,1000") throw new Error(`Unexpected delays "${delays}"`);
 * ```
 */
export function maxOfRateLimiter<K>(...limiters: RateLimiter<K>[]): RateLimiter<K> {
  if (limiters.length === 0) {
    throw new TypeError("Cannot create max-of rate limiter: at least one limiter is required");
  }
  return {
    when(key) {
      let max = 0;
      for (const limiter of limiters) max = Math.max(max, limiter.when(key));
      return max;
    },
    forget(key) {
      for (const limiter of limiters) limiter.forget(key);
    },
    numRequeues(key) {
      let max = 0;
      for (const limiter of limiters) max = Math.max(max, limiter.numRequeues(key));
      return max;
    },
  };
}

/** Options for {@linkcode defaultControllerRateLimiter}. */
export interface DefaultControllerRateLimiterOptions {
  /**
   * The clock for the overall token bucket.
   *
   * @default {realClock}
   */
  clock?: Clock;
}

/**
 * The rate limiter controllers use unless told otherwise, the same as client-go's
 * `DefaultTypedControllerRateLimiter`: the worst of a per-key exponential backoff from
 * 5 ms to 1000 s and an overall token bucket of 10 per second with a burst of 100.
 *
 * @typeParam K The key type.
 * @param options The clock for the token bucket.
 * @returns A fresh rate limiter with its own state.
 *
 * @example Retries back off per key
 * ```ts
 * import { defaultControllerRateLimiter } from "./rate_limiter.ts";
 *
 * const limiter = defaultControllerRateLimiter<string>();
 * const delays = [1, 2, 3].map(() => limiter.when("default/app"));
 * if (delays.join() !== "5,10,20") throw new Error(`Unexpected delays "${delays}"`);
 * if (limiter.numRequeues("default/app") !== 3) throw new Error("Retries not counted");
 * ```
 */
export function defaultControllerRateLimiter<K>(
  options: DefaultControllerRateLimiterOptions = {},
): RateLimiter<K> {
  return maxOfRateLimiter<K>(
    exponentialRateLimiter({ baseDelayMs: 5, maxDelayMs: 1_000_000 }),
    bucketRateLimiter({ qps: 10, burst: 100, clock: options.clock }),
  );
}

function checkDelay(name: string, value: number): void {
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(
      `Cannot create exponential rate limiter: ${name} must be finite and >= 0, got "${value}"`,
    );
  }
}
