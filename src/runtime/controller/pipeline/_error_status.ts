// What a failed attempt writes before its retry is scheduled (`_outcome.ts`): the status of
// the controller's `onError` (Java Operator SDK's `updateErrorStatus`), and after the last of
// `retry.maxAttempts` a `Ready=False` condition when the status has `conditions`. Both go
// through the attempt's context, in one status write after the attempt's own, so they are the
// controller's own writes: their echoes start no reconcile (and so do not reset the count of
// attempts), and the next reconcile sees them.
import type { KubeObject } from "../../../core/object.ts";
import { dataCopy } from "../../../util/freeze.ts";
import type { Logger } from "../../../util/log.ts";
import type { WorkQueue } from "../../queue/workqueue.ts";
import { type Controller, type ReconcileContext, TerminalError } from "../reconcile.ts";
import { exhaustedMessage, RETRIES_EXHAUSTED, type RetryInfo, statusSchemaHas } from "../retry.ts";

/**
 * Where the failed attempt of `key` stands: its number (the retries so far, plus one) and
 * whether it is the last (a `TerminalError`, or `retry.maxAttempts` reached).
 *
 * @param controller The controller.
 * @param queue Its work queue, which counts the retries.
 * @param key The primary's key.
 * @param error What the attempt threw.
 * @returns The retry info.
 */
export function retryInfoOf(
  controller: Pick<Controller<any>, "retry">,
  queue: Pick<WorkQueue<string>, "numRequeues">,
  key: string,
  error: unknown,
): RetryInfo {
  const maxAttempts = controller.retry?.maxAttempts ?? Infinity;
  const attempt = queue.numRequeues(key) + 1;
  return { attempt, maxAttempts, last: error instanceof TerminalError || attempt >= maxAttempts };
}

/** What {@linkcode writeErrorStatus} writes with. */
export interface ErrorStatusInit<T extends KubeObject> {
  readonly controller: Controller<T>;
  /** The primary as the server showed it when the attempt started. */
  readonly cached: T;
  /** The context to write through: the attempt's, or a fresh one once its signal aborted. */
  readonly context: () => ReconcileContext<T>;
  readonly log: Pick<Logger, "warn">;
}

/**
 * Writes what a failed attempt leads to: `onError`'s status, then, after the last of
 * `retry.maxAttempts`, the `RetriesExhausted` condition. A failure of either is logged.
 *
 * @param init The controller, the primary and the context.
 * @param error What the attempt threw.
 * @param retry Where the attempt stands.
 * @returns A promise that resolves once the writes are done or failed.
 */
export async function writeErrorStatus<T extends KubeObject>(
  init: ErrorStatusInit<T>,
  error: unknown,
  retry: RetryInfo,
): Promise<void> {
  const { controller, cached, log } = init;
  const exhausted = retry.last && !(error instanceof TerminalError) &&
    statusSchemaHas(controller.resource, "conditions");
  if (!controller.onError && !exhausted) return;
  const ctx = init.context();
  const failed = (what: string) => (err: unknown) =>
    log.warn(`Cannot write the ${what} of {key}: {error}`, {
      key: ctx.key,
      error: err instanceof Error ? err.message : String(err),
    });
  let pending = false;
  if (controller.onError) {
    try {
      const status = await controller.onError(dataCopy(cached), error, { ...ctx, retry });
      if (status !== undefined) {
        await ctx.patchStatus(dataCopy(cached), status);
        pending = true;
      }
    } catch (err) {
      failed("error status")(err);
    }
  }
  if (exhausted) {
    await ctx.setCondition(dataCopy(cached), {
      type: "Ready",
      status: "False",
      reason: RETRIES_EXHAUSTED,
      message: exhaustedMessage(retry, error),
    }).then(() => void (pending = true), failed(`${RETRIES_EXHAUSTED} condition`));
  }
  // The attempt's status write is done (it ended); these two go together in one more.
  if (pending) await ctx.flushStatus().catch(failed("error status"));
}
