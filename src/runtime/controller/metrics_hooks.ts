/**
 * The metrics hooks of controllers: what a `ControllerRuntime` (`pipeline/runner.ts`)
 * reports, as plain callbacks, so that the runner never imports the metrics registry
 * (`src/metrics/` maps these to controller-runtime's metric families).
 *
 * @module
 */
import type { WorkQueueMetrics } from "../queue/workqueue.ts";
import type { Resource } from "../../core/resource.ts";
import type { BackgroundSample } from "../source/background.ts";

export type { BackgroundSample };

/**
 * How a reconcile ended, as the `result` label of reconcile metrics: `requeue` for
 * `requeue(0)`, `requeue_after` for `requeue(ms)` with `ms > 0` (controller-runtime's labels).
 */
export type ReconcileOutcome = "success" | "requeue" | "requeue_after" | "error" | "terminal";

/** One finished reconcile (or finalize), for metrics. */
export interface ReconcileSample {
  /** Controller name. */
  controller: string;
  /** The primary's key. */
  key: string;
  /** How it ended. */
  result: ReconcileOutcome;
  /** How long it took, in seconds. */
  seconds: number;
  /** The error, for `error` and `terminal`. */
  error?: unknown;
}

/**
 * Why a key was put in the work queue: an event of the primary, an owned or a watched
 * object; a `requeue(ms)`; a failed reconcile's backoff; or the end of a wait for the cache
 * to show the controller's own writes (`cache` when it did, `cache-timeout` when the bound
 * passed first); an optional kind becoming served (`served`: every primary is queued); an
 * external source of `sources` (`reconcileOn`, `reconcileAllOn`) or "reconcile all" on demand
 * (`source`).
 */
export type Cause =
  | "primary"
  | "owns"
  | "watches"
  | "requeue"
  | "error"
  | "cache"
  | "cache-timeout"
  | "served"
  | "source";

/**
 * Metrics hooks of controllers, mapping to controller-runtime's metrics. Hooks run
 * synchronously; they must be cheap and must not throw.
 */
export interface ControllerMetricsHooks {
  /** A key was put in the queue, and why: `kubeno_controller_queue_adds_total{cause}`. */
  queued?(controller: string, cause: Cause): void;
  /**
   * A watch event was the echo of the controller's own write and queued nothing:
   * `kubeno_controller_own_write_echoes_total`.
   */
  echo?(controller: string): void;
  /**
   * A reconcile waited for the cache to show the controller's own writes (`deferred`), or
   * gave up on one that it did not show in time (`expired`):
   * `kubeno_controller_cache_lag_total{outcome}`.
   */
  cacheLag?(controller: string, outcome: "deferred" | "expired"): void;
  /** A reconcile finished: `controller_runtime_reconcile_total`, `_errors_total`, `_time_seconds`. */
  reconcile?(sample: ReconcileSample): void;
  /**
   * A reconcile ran past the controller's `run.timeoutMs` and was cut (it is also reported to
   * `reconcile` as an `error`): `controller_runtime_reconcile_timeouts_total`.
   */
  timeout?(controller: string): void;
  /** Workers busy now: `controller_runtime_active_workers`. */
  activeWorkers?(controller: string, active: number): void;
  /**
   * Whether the API server serves an optional kind the controller caches: `false` at start
   * until it is found served, then at each change (its CRD established or deleted).
   */
  kindServed?(controller: string, kind: Resource<any>, served: boolean): void;
  /** A timer or daemon run ended (or a timer's tick was skipped). */
  background?(sample: BackgroundSample): void;
  /** A daemon started (`+1`) or ended (`-1`). */
  daemonsRunning?(controller: string, daemon: string, delta: 1 | -1): void;
  /** Hooks for the controller's work queue (`workqueue_*{name=controller}`). */
  workqueue?(controller: string): WorkQueueMetrics<string> | undefined;
}
