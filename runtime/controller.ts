/**
 * One controller: {@linkcode reconcile} declares it (the kind it reconciles, what it owns,
 * watches and reads, predicates, a finalizer, concurrency) and {@linkcode ControllerRuntime}
 * runs it — informer events become keys in a work queue, each key is reconciled by one worker
 * at a time with its {@linkcode ReconcileContext}, `requeue(ms)` brings it back, errors are
 * retried with backoff and a {@linkcode TerminalError} never is. Reconciliation is
 * level-based: the function reads the state it is given, never the event. Predicates,
 * {@linkcode finalizer} and the {@linkcode EventRecorder} are usable on their own.
 *
 * `@kubeno/kubeno` exports the everyday part (`reconcile`, `requeue`, `TerminalError`, the
 * predicates); this entry adds the runner and the types beneath it.
 *
 * @example A declaration: which events reach the reconcile, and what it returns
 * ```ts
 * import { and, generationChanged, not, reconcile, requeue } from "./controller.ts";
 * import { ConfigMap } from "../core.ts";
 *
 * const controller = reconcile(ConfigMap, {
 *   primary: {
 *     predicates: [and(generationChanged, not((ev) => ev.object.metadata.name === "skip"))],
 *   },
 *   reconcile: (cm) => cm.data?.ready === "true" ? undefined : requeue(5_000),
 * });
 * if (controller.name !== "configmap" || controller.resource !== ConfigMap) throw new Error();
 * ```
 *
 * @module
 */
export {
  type ContextDeleteOptions,
  type ContextWriteOptions,
  type Controller,
  type ErrorContext,
  type MapFunc,
  type PrimaryOptions,
  reconcile,
  type ReconcileContext,
  type ReconcileOptions,
  type ReconcileResult,
  type Requeue,
  requeue,
  type RequeueOptions,
  type RunOptions,
  type Source,
  type StatusOf,
  TerminalError,
  type WatchesFrom,
  watchesFrom,
  type WatchSpec,
} from "../src/runtime/controller/reconcile.ts";
export { ControllerError } from "../src/runtime/controller/controller_error.ts";
export {
  RETRIES_EXHAUSTED,
  type RetryInfo,
  type RetryOptions,
  type RetryPolicy,
} from "../src/runtime/controller/retry.ts";
export type { ApplyObject } from "../src/client/types.ts";
export {
  type CachedKind,
  type CacheRole,
  type CacheScope,
  type CacheSpec,
  isOptionalKind,
} from "../src/runtime/controller/caches.ts";
export {
  type ExternalSource,
  reconcileAllOn,
  reconcileOn,
} from "../src/runtime/source/external.ts";
export {
  type BackgroundContext,
  type Daemon,
  daemon,
  type DaemonOptions,
  every,
  type EveryOptions,
  type Timer,
} from "../src/runtime/source/timers.ts";
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
} from "../src/runtime/controller/predicates.ts";
export {
  finalizer,
  type FinalizerEvent,
  type FinalizerOptions,
  hasFinalizer,
} from "../src/runtime/controller/finalizer.ts";
export {
  type EventClient,
  EventRecorder,
  type EventRecorderOptions,
  type EventType,
} from "../src/runtime/controller/events.ts";
export {
  type BackgroundSample,
  type Cause,
  type ControllerMetricsHooks,
  type ReconcileOutcome,
  type ReconcileSample,
} from "../src/runtime/controller/metrics_hooks.ts";
export { ControllerRuntime } from "../src/runtime/controller/pipeline/runner.ts";
export { type ControllerRuntimeOptions } from "../src/runtime/controller/pipeline/assemble.ts";
