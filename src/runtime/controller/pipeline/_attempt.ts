// One reconcile attempt and its bound (`timeoutMs`), as controller-runtime's
// `ReconciliationTimeout` (pkg/internal/controller/controller.go): the attempt's signal
// aborts when the bound passes, and the attempt counts as failed. Unlike Go, where the worker
// waits until `Reconcile` returns, the runner stops waiting for it at once: a promise cannot
// be cut short, and a worker held by one hung key would starve every other key. What the
// abandoned attempt still does is made harmless by the context, which refuses every write
// once this signal aborted (`../context/`), so it cannot write over the next attempt.
import type { Clock, TimerId } from "../../../util/clock.ts";
import type { ReconcileResult } from "../reconcile.ts";
import type { Settled } from "./_outcome.ts";

/** What {@linkcode boundedAttempt} needs. */
export interface AttemptInit {
  /** The primary's key, for the timeout's message. */
  readonly key: string;
  /** The bound; none when `undefined`. */
  readonly timeoutMs: number | undefined;
  /** Whose timer measures the bound. */
  readonly clock: Pick<Clock, "setTimeout" | "clearTimeout">;
  /** The runner's own signal (shutdown): the attempt's signal aborts with it too. */
  readonly signal: AbortSignal;
}

/** One attempt: the signal its context carries, and how to run it within the bound. */
export interface Attempt {
  /** `ctx.signal`: aborts at shutdown, or with a `TimeoutError` when the bound passes. */
  readonly signal: AbortSignal;
  /** Whether the bound passed before the attempt settled (the attempt was cut). */
  readonly timedOut: boolean;
  /**
   * Runs the attempt. Resolves with what it returned or threw, or, once the bound passes
   * first, with the `TimeoutError` the signal aborted with; a later settlement of the
   * attempt is ignored. Never rejects.
   */
  run(fn: () => ReconcileResult | Promise<ReconcileResult>): Promise<Settled>;
}

/**
 * Starts one reconcile attempt of `init.key`, bounded by `init.timeoutMs`.
 *
 * @param init The key, the bound, the clock and the runner's signal.
 * @returns The attempt.
 */
export function boundedAttempt(init: AttemptInit): Attempt {
  const { key, timeoutMs, clock } = init;
  if (timeoutMs === undefined) {
    return { signal: init.signal, timedOut: false, run: settledOf };
  }
  const cut = new AbortController();
  const signal = AbortSignal.any([init.signal, cut.signal]);
  // The reason `AbortSignal.timeout()` aborts with: code that already tells a fetch timeout
  // apart by `err.name === "TimeoutError"` tells this one apart too.
  const reason = new DOMException(
    `Reconcile of "${key}" timed out after ${timeoutMs} ms`,
    "TimeoutError",
  );
  let timedOut = false;
  return {
    signal,
    get timedOut() {
      return timedOut;
    },
    async run(fn) {
      let timer: TimerId | undefined;
      const expired = new Promise<Settled>((resolve) => {
        timer = clock.setTimeout(() => {
          timedOut = true;
          // Resolved before the abort: an attempt that rejects on the abort settles after.
          resolve({ ok: false, error: reason });
          cut.abort(reason);
        }, timeoutMs);
      });
      try {
        const settled = await Promise.race([settledOf(fn), expired]);
        return timedOut ? { ok: false, error: reason } : settled;
      } finally {
        clock.clearTimeout(timer!);
      }
    },
  };
}

/** What `fn` returned or threw, synchronously or not. */
async function settledOf(fn: () => ReconcileResult | Promise<ReconcileResult>): Promise<Settled> {
  try {
    return { ok: true, result: await fn() };
  } catch (error) {
    return { ok: false, error };
  }
}
