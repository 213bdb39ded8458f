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
 *   predicates: [and(generationChanged, not((ev) => ev.object.metadata.name === "skip"))],
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
  type MapFunc,
  reconcile,
  type ReconcileContext,
  type ReconcileOptions,
  type ReconcileResult,
  type Requeue,
  requeue,
  type RequeueOptions,
  type StatusOf,
  TerminalError,
  type WatchSpec,
} from "../src/runtime/controller/reconcile.ts";
export type { ApplyObject } from "../src/client/types.ts";
export {
  type CachedKind,
  type CacheRole,
  type CacheScope,
  type CacheSpec,
  isOptionalKind,
} from "../src/runtime/controller/caches.ts";
export {
  reconcileAllOn,
  reconcileOn,
  type Trigger,
} from "../src/runtime/source/external_triggers.ts";
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
  type ControllerMetricsHooks,
  ControllerRuntime,
  type ControllerRuntimeOptions,
  type QueueCause,
  type ReconcileOutcome,
  type ReconcileSample,
} from "../src/runtime/controller/runner.ts";
