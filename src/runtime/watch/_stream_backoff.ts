// Backoff between a watch stream's steps, as an adapter over the state machine's output, in
// the manner of kube-rs's `StreamBackoff`: the machine says that a step failed, this waits
// before asking it for the next step, and reports the failure once per change of state.
import type { Clock } from "../../util/clock.ts";
import type { KubeObject } from "../../core/object.ts";
import type { Backoff } from "./_backoff.ts";
import { log } from "./_context.ts";
import type { Failed } from "./_state.ts";
import type { WatchEvent, WatchStats } from "./types.ts";
import type { WatchError } from "./watch_error.ts";

/** What {@linkcode withBackoff} needs besides the stream. */
export interface StreamBackoffOptions {
  readonly backoff: Backoff;
  readonly clock: Clock;
  /** Ends a wait, and the stream, without an error. */
  readonly signal?: AbortSignal;
  /** Retry persistent failures too, yielding them as `error` events. */
  readonly retryPersistent?: boolean;
  /** Where failures are counted and the current one is kept. */
  readonly stats: WatchStats;
}

/**
 * Passes `source`'s events through; after each failure waits the backoff's next delay
 * before pulling again, yielding an `error` event when the failure differs from the last.
 *
 * @throws {WatchError} A persistent failure, unless `retryPersistent`.
 */
export async function* withBackoff<T extends KubeObject>(
  source: AsyncIterable<WatchEvent<T> | Failed>,
  options: StreamBackoffOptions,
): AsyncGenerator<WatchEvent<T>> {
  const { backoff, clock, signal, stats } = options;
  for await (const item of source) {
    if (item.type !== "failed") {
      yield item;
      continue;
    }
    const { error } = item;
    stats.failures++;
    if (error.persistent && !options.retryPersistent) {
      log.error("{message}", { message: error.message, error });
      stats.error = error;
      throw error;
    }
    const delay = backoff.next();
    if (report(stats, error, delay)) yield { type: "error", error };
    stats.state = "backoff";
    try {
      await clock.sleep(delay, signal);
    } catch {
      return;
    }
  }
}

/** Logs a failure once per change of state; returns whether it was a change. */
function report(stats: WatchStats, error: WatchError, delayMs: number): boolean {
  const prev = stats.error;
  stats.error = error;
  const same = prev !== undefined && prev.code === error.code && prev.reason === error.reason;
  const props = { message: error.message, delayMs, error };
  if (same) log.debug("{message}; retrying in {delayMs} ms", props);
  else log.warn("{message}; retrying with backoff, first in {delayMs} ms", props);
  return !same;
}
