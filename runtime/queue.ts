/**
 * The work queue, as client-go's `util/workqueue` with controller-runtime's priorities: a
 * {@linkcode WorkQueue} serves the highest priority first and FIFO within one (the initial
 * list and resyncs go in at {@linkcode LOW_PRIORITY}), is de-duplicating, hands a key to one
 * worker at a time, delays adds and drains on shutdown;
 * its {@linkcode RateLimiter}s set the delay of retries, per item (exponential) and overall (a
 * token bucket), combined by {@linkcode defaultControllerRateLimiter} as controller-runtime's
 * default.
 *
 * @example A work queue hands each key to one worker at a time
 * ```ts
 * import { WorkQueue } from "./queue.ts";
 *
 * const queue = new WorkQueue<string>();
 * queue.add("default/web");
 * queue.add("default/web"); // de-duplicated
 * if (queue.len() !== 1) throw new Error();
 * const item = await queue.get();
 * if (item.shutdown || item.key !== "default/web") throw new Error();
 * queue.done(item.key);
 * queue.shutDown();
 * ```
 *
 * @module
 */
export {
  DEFAULT_PRIORITY,
  LOW_PRIORITY,
  WorkQueue,
  type WorkQueueAddOptions,
  type WorkQueueGetOptions,
  type WorkQueueItem,
  type WorkQueueMetrics,
  type WorkQueueOptions,
} from "../src/runtime/queue/workqueue.ts";
export {
  bucketRateLimiter,
  type BucketRateLimiterOptions,
  defaultControllerRateLimiter,
  type DefaultControllerRateLimiterOptions,
  exponentialRateLimiter,
  type ExponentialRateLimiterOptions,
  maxOfRateLimiter,
  type RateLimiter,
} from "../src/runtime/queue/rate_limiter.ts";
