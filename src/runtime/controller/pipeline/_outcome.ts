// What the end of one reconcile (or finalize) does to its key, as controller-runtime's
// `reconcileHandler` (pkg/internal/controller/controller.go): one switch over how it ended.
//
// | ended with          | result          | the key                                 |
// | ------------------- | --------------- | --------------------------------------- |
// | nothing             | `success`       | backoff forgotten                       |
// | `requeue(0)`        | `requeue`       | backoff forgotten, queued again at once |
// | `requeue(ms > 0)`   | `requeue_after` | backoff forgotten, queued after `ms`    |
// | a `TerminalError`   | `terminal`      | backoff forgotten, not retried          |
// | any other throw     | `error`         | queued after its backoff                |
// | the same, the last  | `error`         | backoff forgotten, not retried          |
//
// "The last" is the throw of attempt `retry.maxAttempts` (`../retry.ts`): it is logged and
// recorded as a `RetriesExhausted` Warning Event, and its forgotten backoff lets the next
// event of the object start again at attempt 1.
//
// A change to the object still queues it at once in every case (its event, not this).
import type { Logger } from "../../../util/log.ts";
import { LOW_PRIORITY, type WorkQueue } from "../../queue/workqueue.ts";
import type { ControllerMetricsHooks, ReconcileOutcome } from "../metrics_hooks.ts";
import { type ReconcileResult, TerminalError } from "../reconcile.ts";
import { exhaustedMessage, RETRIES_EXHAUSTED, type RetryInfo } from "../retry.ts";

/** How a reconcile settled: what it returned, or what it threw. */
export type Settled =
  | { readonly ok: true; readonly result: ReconcileResult }
  | { readonly ok: false; readonly error: unknown };

/** What an outcome acts on: the controller's queue, its metrics, its log and Events. */
export interface OutcomeTarget {
  /** Controller name, for metrics. */
  readonly controller: string;
  /** The controller's work queue. */
  readonly queue: Pick<WorkQueue<string>, "forget" | "addAfter" | "addRateLimited" | "numRequeues">;
  /** Metrics hooks. */
  readonly metrics?: ControllerMetricsHooks;
  /** The reconcile's logger. */
  readonly log: Pick<Logger, "warn" | "error">;
  /** Records the Warning Event of a terminal error, or of retries exhausted, on the primary. */
  warn(reason: "ReconcileFailed" | typeof RETRIES_EXHAUSTED, message: string): void;
}

/**
 * The metrics label of how a reconcile settled.
 *
 * @param settled What it returned or threw.
 * @returns `success`, `requeue`, `requeue_after`, `terminal` or `error`.
 */
export function outcomeOf(settled: Settled): ReconcileOutcome {
  if (!settled.ok) return settled.error instanceof TerminalError ? "terminal" : "error";
  const ms = settled.result?.requeueAfterMs;
  if (typeof ms !== "number") return "success";
  return ms > 0 ? "requeue_after" : "requeue";
}

/**
 * Acts on how a reconcile of `key` settled: forgets its backoff, queues it again after a
 * `requeue(ms)` or its backoff, logs a failure (and records a terminal one as an Event), and
 * reports the reconcile metrics sample.
 *
 * @param key The primary's key.
 * @param settled What the reconcile returned or threw.
 * @param startedAt `performance.now()` when the reconcile started.
 * @param target The queue, metrics, log and Events to act on.
 * @param retry Where a failed attempt stands (`_error_status.ts`); when `last`, an error is
 * not retried.
 * @returns The outcome, as the metrics sample labels it.
 */
export function settle(
  key: string,
  settled: Settled,
  startedAt: number,
  target: OutcomeTarget,
  retry?: RetryInfo,
): ReconcileOutcome {
  const { controller, queue, metrics, log } = target;
  const result = outcomeOf(settled);
  const error = settled.ok ? undefined : settled.error;
  const message = () => error instanceof Error ? error.message : String(error);
  switch (result) {
    case "success":
      queue.forget(key);
      break;
    case "requeue":
    case "requeue_after":
      queue.forget(key);
      metrics?.queued?.(controller, "requeue");
      queue.addAfter(key, (settled.ok && settled.result?.requeueAfterMs) || 0, {
        priority: (settled.ok ? settled.result?.priority : undefined) ?? LOW_PRIORITY,
      });
      break;
    case "terminal":
      queue.forget(key);
      log.error("Reconcile of {key} failed and will not be retried: {error}", {
        key,
        error: message(),
      });
      target.warn("ReconcileFailed", message());
      break;
    case "error":
      if (retry?.last) {
        queue.forget(key);
        log.error(
          "Reconcile of {key} failed {attempts} times and will not be retried until it changes: {error}",
          {
            key,
            attempts: retry.attempt,
            error: message(),
          },
        );
        target.warn(RETRIES_EXHAUSTED, exhaustedMessage(retry, error));
        break;
      }
      metrics?.queued?.(controller, "error");
      queue.addRateLimited(key);
      log.warn("Reconcile of {key} failed, retry {retry}: {error}", {
        key,
        retry: queue.numRequeues(key),
        error: message(),
      });
      break;
  }
  metrics?.reconcile?.({
    controller,
    key,
    result,
    seconds: (performance.now() - startedAt) / 1000,
    ...(error !== undefined ? { error } : {}),
  });
  return result;
}
