/**
 * The retry policy of a controller (`reconcile(kind, { retry })`, or the default of every
 * controller in `operator({ retry })`): how long a key waits after a failed reconcile, and how
 * many attempts it gets before the controller gives up on it until it changes again.
 *
 * ## Flow
 *
 * A reconcile (or finalize) that throws is attempt `n` of its key, `n` counted by the work
 * queue's rate limiter since the key last succeeded. Before attempt `maxAttempts` the key is
 * queued again after `baseDelayMs * 2^(n-1)`, at most `maxDelayMs` (and never faster than the
 * controller's overall bucket of 10 per second, burst 100). After attempt `maxAttempts`:
 *
 * 1. the key is not queued again and its count is forgotten, so the next event of the object
 *    (a change to it or to what it owns or watches, a resync) starts again at attempt 1;
 * 2. a Warning Event `RetriesExhausted` on the primary names the attempts and the last error;
 * 3. when the primary's status schema has `conditions`, its `Ready` condition is set to
 *    `False` with reason `RetriesExhausted` and the same message.
 *
 * `onError` (see `ReconcileOptions.onError`) gets the attempt and whether it is the last in
 * `ctx.retry`; a {@linkcode TerminalError} is always the last.
 *
 * ## Equivalents
 *
 * | kubeno                     | controller-runtime                                                                                   | Java Operator SDK                                  |
 * | -------------------------- | ---------------------------------------------------------------------------------------------------- | -------------------------------------------------- |
 * | `retry.baseDelayMs`        | `controller.Options{RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter(base, max)}`     | `@GradualRetry(initialInterval)`                   |
 * | `retry.maxDelayMs`         | the `max` of the same limiter                                                                        | `@GradualRetry(maxInterval)`                       |
 * | doubling                   | built into the exponential limiter                                                                   | `@GradualRetry(intervalMultiplier = 2)`            |
 * | `retry.maxAttempts`        | none built in: the reconciler counts and returns `nil`                                               | `@GradualRetry(maxAttempts)`                       |
 * | the Event and condition    | none built in                                                                                        | `updateErrorStatus` with `RetryInfo.isLastAttempt` |
 * | `TerminalError`            | `reconcile.TerminalError(err)`                                                                       | no retry for that exception (a custom `Retry`)     |
 *
 * ## Guarantees
 *
 * - A key is attempted at most `maxAttempts` times in a row without an event of its object
 *   in between (the controller's own writes, whose echoes start no reconcile, do not count
 *   as such events).
 * - Without `retry`, nothing changes: 5 ms doubling to 1,000,000 ms, forever (client-go's
 *   default controller rate limiter).
 *
 * ## Caveats
 *
 * - The attempt count is the rate limiter's `numRequeues`: with a custom manager
 *   `rateLimiter` and no `retry` delays, `maxAttempts` counts through that limiter.
 * - A real change while a key is backing off queues it at once, but does not reset its count
 *   (as controller-runtime); only a success, or giving up, does.
 * - A failed attempt's own status (what it set before it threw) is one write; `onError`'s
 *   status, with the `Ready` condition after the last attempt, is one more.
 * - After an attempt cut by `run.timeoutMs`, `onError` and the condition write through a
 *   fresh context (the cut one refuses writes), which does not know that attempt's writes.
 *
 * @module
 */
import type { Clock } from "../../util/clock.ts";
import type { Resource } from "../../core/resource.ts";
import {
  bucketRateLimiter,
  exponentialRateLimiter,
  maxOfRateLimiter,
  type RateLimiter,
} from "../queue/rate_limiter.ts";

/** What {@linkcode withRetryDefaults} reads and writes of a controller. */
export interface RetryDeclared {
  /** The controller's name. */
  readonly name: string;
  /** Its own `retry` option, as given. */
  readonly retryOptions?: RetryOptions;
  /** Its policy. */
  readonly retry?: RetryPolicy;
}

/** The `retry` option of `reconcile()` and `operator()`. */
export interface RetryOptions {
  /**
   * The wait after the first failed attempt, in milliseconds; each further failure doubles it.
   * @default 5
   */
  readonly baseDelayMs?: number;
  /**
   * The longest wait between attempts, in milliseconds.
   * @default 1_000_000
   */
  readonly maxDelayMs?: number;
  /**
   * Attempts before the controller gives up on a key until its object changes again: an
   * integer, 1 or more, or `Infinity`.
   * @default Infinity
   */
  readonly maxAttempts?: number;
}

/** A controller's retry policy, its defaults filled in. */
export interface RetryPolicy {
  /** The first wait, in milliseconds. */
  readonly baseDelayMs: number;
  /** The longest wait, in milliseconds. */
  readonly maxDelayMs: number;
  /** Attempts before giving up; `Infinity` never gives up. */
  readonly maxAttempts: number;
}

/** Where a failed attempt stands: what `onError` gets as `ctx.retry`. */
export interface RetryInfo {
  /** This attempt's number, from 1, since the key last succeeded or was given up on. */
  readonly attempt: number;
  /** The controller's `retry.maxAttempts` (`Infinity` when unbounded). */
  readonly maxAttempts: number;
  /** `true` when no retry follows: the last attempt, or a `TerminalError`. */
  readonly last: boolean;
}

/** The reason of the Event and condition recorded when a key's retries are exhausted. */
export const RETRIES_EXHAUSTED = "RetriesExhausted";

const KNOWN = ["baseDelayMs", "maxDelayMs", "maxAttempts"];

/**
 * Checks a `retry` option and fills in its defaults.
 *
 * @param what Whose option it is, for the error, e.g. `controller "app"`.
 * @param retry The option.
 * @returns The policy.
 * @throws {TypeError} When a field is unknown.
 * @throws {RangeError} When a delay is negative or not finite, `baseDelayMs` exceeds
 * `maxDelayMs`, or `maxAttempts` is not a positive integer nor `Infinity`.
 *
 * @example Three attempts, 100 ms then 200 ms apart
 * ```ts
 * import { retryPolicyOf } from "./retry.ts";
 * const p = retryPolicyOf('controller "app"', { baseDelayMs: 100, maxAttempts: 3 });
 * if (p.maxDelayMs !== 1_000_000 || p.maxAttempts !== 3) throw new Error();
 * ```
 */
export function retryPolicyOf(what: string, retry: RetryOptions): RetryPolicy {
  const fail = (msg: string): never => {
    throw new RangeError(`Cannot define ${what}: ${msg}`);
  };
  for (const key of Object.keys(retry)) {
    if (!KNOWN.includes(key)) {
      throw new TypeError(
        `Cannot define ${what}: unknown option "retry.${key}" (known: ${KNOWN.join(", ")})`,
      );
    }
  }
  const { baseDelayMs = 5, maxDelayMs = 1_000_000, maxAttempts = Infinity } = retry;
  for (const [name, ms] of [["baseDelayMs", baseDelayMs], ["maxDelayMs", maxDelayMs]] as const) {
    if (!(Number.isFinite(ms) && ms >= 0)) {
      fail(`retry.${name} must be a finite number >= 0, got "${ms}"`);
    }
  }
  if (baseDelayMs > maxDelayMs) {
    fail(`retry.baseDelayMs "${baseDelayMs}" exceeds retry.maxDelayMs "${maxDelayMs}"`);
  }
  if (!(maxAttempts === Infinity || (Number.isInteger(maxAttempts) && maxAttempts >= 1))) {
    fail(`retry.maxAttempts must be an integer >= 1 or Infinity, got "${maxAttempts}"`);
  }
  return Object.freeze({ baseDelayMs, maxDelayMs, maxAttempts });
}

/**
 * The work queue rate limiter of a retry policy: its per-key exponential backoff, and the
 * overall bucket of client-go's default controller rate limiter (10 per second, burst 100).
 *
 * @param policy The policy.
 * @param clock The bucket's clock.
 * @returns A fresh rate limiter.
 *
 * @example Waits of 100, 200 and 400 ms
 * ```ts
 * import { retryPolicyOf, retryRateLimiter } from "./retry.ts";
 * const limiter = retryRateLimiter(retryPolicyOf("c", { baseDelayMs: 100 }));
 * const waits = [1, 2, 3].map(() => limiter.when("ns/a"));
 * if (waits.join() !== "100,200,400") throw new Error(waits.join());
 * ```
 */
export function retryRateLimiter(policy: RetryPolicy, clock?: Clock): RateLimiter<string> {
  return maxOfRateLimiter<string>(
    exponentialRateLimiter({ baseDelayMs: policy.baseDelayMs, maxDelayMs: policy.maxDelayMs }),
    bucketRateLimiter({ qps: 10, burst: 100, clock }),
  );
}

/**
 * `controller` with the fields of `defaults` that its own `retry` does not set: how
 * `operator({ retry })` gives every controller a default.
 *
 * @typeParam C The controller type.
 * @param controller A controller from `reconcile()`.
 * @param defaults The operator's `retry` option.
 * @param what Whose option `defaults` is, for the error, e.g. `operator "app-operator"`.
 * @returns The controller, or a frozen copy with its policy merged.
 * @throws {TypeError} See {@linkcode retryPolicyOf}.
 * @throws {RangeError} See {@linkcode retryPolicyOf}.
 *
 * @example A controller's own maxAttempts over the operator's
 * ```ts
 * import { withRetryDefaults } from "./retry.ts";
 * import { reconcile } from "./reconcile.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 * const c = reconcile(ConfigMap, { retry: { maxAttempts: 3 }, reconcile() {} });
 * const merged = withRetryDefaults(c, { baseDelayMs: 50, maxAttempts: 10 }, "operator");
 * if (merged.retry?.maxAttempts !== 3 || merged.retry.baseDelayMs !== 50) throw new Error();
 * ```
 */
export function withRetryDefaults<C extends RetryDeclared>(
  controller: C,
  defaults: RetryOptions | undefined,
  what: string,
): C {
  if (defaults === undefined) return controller;
  retryPolicyOf(what, defaults);
  const own = controller.retryOptions ?? {};
  const merged = { ...defaults, ...own };
  return Object.freeze({
    ...controller,
    retryOptions: Object.freeze(merged),
    retry: retryPolicyOf(`controller "${controller.name}"`, merged),
  });
}

/**
 * Whether the status schema of `resource` (one made with `defineResource`) has `field`.
 * Built-in kinds have no schema here: their status is their own controllers'.
 *
 * @param resource The kind.
 * @param field The status field.
 * @returns `true` when the status schema is an object with that field.
 */
export function statusSchemaHas(resource: Resource, field: string): boolean {
  const schema = (resource as { statusSchema?: { shape?: Record<string, unknown> } })
    .statusSchema;
  return schema?.shape?.[field] !== undefined;
}

/**
 * The message of the `RetriesExhausted` Event and condition: the attempts and the last error.
 *
 * @param retry The last attempt.
 * @param error What it threw.
 * @returns One line.
 *
 * @example
 * ```ts
 * import { exhaustedMessage } from "./retry.ts";
 * const m = exhaustedMessage({ attempt: 3, maxAttempts: 3, last: true }, new Error("boom"));
 * if (!m.startsWith("Reconcile failed 3 times")) throw new Error(m);
 * ```
 */
export function exhaustedMessage(retry: RetryInfo, error: unknown): string {
  const last = error instanceof Error ? error.message : String(error);
  return `Reconcile failed ${retry.attempt} times (retry.maxAttempts ${retry.maxAttempts}), ` +
    `not retried until the object changes; last error: ${last.split("\n")[0]}`;
}
