/**
 * The machinery under `reconcile` and `operator`, each piece usable on its own, bottom to
 * top: a resilient {@linkcode watch} stream of {@linkcode ObjectEvent}s, an indexed
 * {@linkcode Store} kept current by an {@linkcode Informer} (shared per kind and query by an
 * {@linkcode InformerFactory}) and read through a {@linkcode CacheReader}, a de-duplicating
 * {@linkcode WorkQueue} with rate limiters,
 * the {@linkcode ControllerRuntime} that runs one controller, and the {@linkcode Manager}
 * that runs many with leader election, health probes, Events and structured logs — or, past
 * one leader, with a {@linkcode ShardCoordinator}: replicas share the objects through Leases
 * and the API server's sharded list and watch (KEP-5866), each caching and reconciling the
 * virtual shards it holds.
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
 * @example Which shard an object falls in, and the selector that asks for shards
 * ```ts
 * import { fnv1a64, shardOf, shardSelector } from "./runtime.ts";
 *
 * const pod = { metadata: { name: "web", namespace: "shop", uid: "foobar" } };
 * if (fnv1a64("foobar") !== 0x85944171f73967e8n) throw new Error();
 * if (shardOf(pod, "uid", 12) !== 6) throw new Error(); // 0x8594… / (2^64 / 12)
 * const selector = shardSelector("uid", [6, 7], 12);
 * if (!selector?.startsWith("shardRange(object.metadata.uid, '0x8000000000000000'")) {
 *   throw new Error(selector ?? "null");
 * }
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
export type { ShardFilter } from "./src/runtime/cache/shard_filter.ts";
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
  type ContextDeleteOptions,
  type ContextWriteOptions,
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
  type QueueCause,
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
  type ManagerSharding,
  type ShardStat,
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

// Sharding
export {
  DEFAULT_SHARDS,
  ShardCoordinator,
  type ShardCoordinatorOptions,
  type ShardingEnd,
  type ShardingMetrics,
  type ShardingOptions,
} from "./src/runtime/sharding/coordinator.ts";
export {
  fnv1a64,
  HASH_SPACE,
  type HashRange,
  shardIndex,
  type ShardKey,
  shardOf,
  shardRanges,
  shardSelector,
} from "./src/runtime/sharding/hash_range.ts";
export { assignShards } from "./src/runtime/sharding/assignment.ts";

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
