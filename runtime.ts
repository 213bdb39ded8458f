/**
 * The machinery under `reconcile` and `operator`, each piece usable on its own, bottom to
 * top: a resilient {@linkcode watch} stream of {@linkcode ObjectEvent}s, an indexed
 * {@linkcode Store} kept current by an {@linkcode Informer} (shared per kind and query by an
 * {@linkcode InformerFactory}) and read through a {@linkcode CacheReader}, a de-duplicating
 * {@linkcode WorkQueue} with rate limiters,
 * the {@linkcode ControllerRuntime} that runs one controller, and the {@linkcode Manager}
 * that runs many with leader election, health probes, Events and structured logs.
 *
 * Every timer goes through an injectable {@linkcode Clock}; `FakeClock` in
 * `@kubeno/kubeno/testing` drives them in tests.
 *
 * @example A work queue hands each key to one worker at a time
 * ```ts
 * import { WorkQueue } from "./runtime.ts";
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

// Watch
export {
  type BackoffOptions,
  type ObjectEvent,
  watch,
  type WatchClient,
  type WatchEvent,
  type WatchOptions,
  type WatchQuery,
  type WatchStats,
  WatchStream,
} from "./src/runtime/watch/watch.ts";
export { WatchError, type WatchErrorInit } from "./src/runtime/watch/watch_error.ts";

// Cache
export {
  type IndexFunc,
  Store,
  type StoreChanges,
  type StoreListOptions,
  type StoreOptions,
} from "./src/runtime/cache/store.ts";
export {
  Informer,
  informer,
  type InformerHandlers,
  type InformerHealth,
  type InformerOptions,
  stripManagedFields,
} from "./src/runtime/cache/informer.ts";
export {
  InformerFactory,
  type InformerFactoryOptions,
  type InformerQuery,
} from "./src/runtime/cache/informer_factory.ts";
export {
  type CachedSource,
  type CacheGetOptions,
  type CacheListOptions,
  type CacheReader,
  InformerReader,
  type InformerReaderOptions,
} from "./src/runtime/cache/reader.ts";

// Work queue
export {
  WorkQueue,
  type WorkQueueGetOptions,
  type WorkQueueItem,
  type WorkQueueMetrics,
  type WorkQueueOptions,
} from "./src/runtime/queue/workqueue.ts";
export {
  bucketRateLimiter,
  type BucketRateLimiterOptions,
  defaultControllerRateLimiter,
  type DefaultControllerRateLimiterOptions,
  exponentialRateLimiter,
  type ExponentialRateLimiterOptions,
  maxOfRateLimiter,
  type RateLimiter,
} from "./src/runtime/queue/rate_limiter.ts";

// Controller
export {
  type Controller,
  type MapFunc,
  reconcile,
  type ReconcileContext,
  type ReconcileOptions,
  type ReconcileResult,
  type Requeue,
  requeue,
  type StatusOf,
  TerminalError,
  type WatchSpec,
} from "./src/runtime/controller/reconcile.ts";
export type {
  CachedKind,
  CacheRole,
  CacheScope,
  CacheSpec,
} from "./src/runtime/controller/caches.ts";
export {
  and,
  annotationsChanged,
  deletionStarted,
  generationChanged,
  labelsChanged,
  not,
  or,
  type Predicate,
  resourceVersionChanged,
} from "./src/runtime/controller/predicates.ts";
export {
  finalizer,
  type FinalizerEvent,
  type FinalizerOptions,
  hasFinalizer,
} from "./src/runtime/controller/finalizer.ts";
export {
  type EventClient,
  EventRecorder,
  type EventRecorderOptions,
  type EventType,
} from "./src/runtime/controller/events.ts";
export {
  type ControllerMetricsHooks,
  ControllerRuntime,
  type ControllerRuntimeOptions,
  type ReconcileOutcome,
  type ReconcileSample,
} from "./src/runtime/controller/runner.ts";

// Manager
export {
  createManager,
  type InformerStatus,
  type LeaderElectionContext,
  Manager,
  type ManagerHealth,
  type ManagerOptions,
} from "./src/runtime/manager/manager.ts";
export {
  type LeaderElectionEnd,
  type LeaderElectionMetrics,
  LeaderElector,
  leaderElector,
  type LeaderElectorOptions,
  type LeaseClient,
} from "./src/runtime/manager/leader_election.ts";
export {
  type CheckResult,
  type HealthCheck,
  HealthChecks,
  type HttpEndpoint,
  informersSynced,
  type ProbedInformer,
  type ProbeKind,
  serveProbes,
  type ServeProbesOptions,
  watchesNotStalled,
  type WatchesNotStalledOptions,
} from "./src/runtime/manager/health.ts";

// Time and logs
export { type Clock, realClock, type TimerId } from "./src/util/clock.ts";
export {
  configureLogging,
  getLogger,
  type LogFormat,
  type Logger,
  type LoggingOptions,
  type LogLevel,
  resetLogging,
} from "./src/util/log.ts";
