/**
 * How one controller's stages are built and wired to each other — sources → write gate →
 * queue → workers, with the timers and daemons beside them — and the options that shape
 * them. `runner.ts` starts and stops what this builds.
 *
 * @module
 */
import type { Client } from "../../../client/client.ts";
import type { KubeObject } from "../../../core/object.ts";
import type { Clock } from "../../../util/clock.ts";
import type { Logger } from "../../../util/log.ts";
import type { InformerFactory } from "../../cache/informer_factory.ts";
import type { ShardFilter } from "../../cache/shard_filter.ts";
import type { RateLimiter } from "../../queue/rate_limiter.ts";
import { WorkQueue } from "../../queue/workqueue.ts";
import { Background } from "../../source/background.ts";
import { EventRecorder } from "../events.ts";
import { retryRateLimiter } from "../retry.ts";
import type { ControllerMetricsHooks } from "../metrics_hooks.ts";
import type { Controller } from "../reconcile.ts";
import { ControllerInformers } from "./informers.ts";
import { Intake } from "./intake.ts";
import { Sources } from "./sources.ts";
import { WriteGate } from "./write_gate.ts";
import { Workers } from "./worker.ts";

/** Options of `ControllerRuntime`. */
export interface ControllerRuntimeOptions {
  /** The client reconciles and finalizer writes use. */
  client: Client;
  /** Where informers come from; shared with other controllers. */
  informers: InformerFactory;
  /**
   * Namespaces to watch namespaced kinds in.
   * @default all namespaces
   */
  namespaces?: readonly string[];
  /** Metrics hooks. */
  metrics?: ControllerMetricsHooks;
  /**
   * Rate limiter of the work queue; not used when the controller's `retry` sets a delay.
   * @default defaultControllerRateLimiter() (5 ms doubling to 1000 s per key, 10 qps burst 100)
   */
  rateLimiter?: RateLimiter<string>;
  /**
   * Records Events for the controller.
   * @default an EventRecorder with component set to the controller name
   */
  events?: EventRecorder;
  /**
   * The clock of the work queue's delays and of the runner's own waits.
   * @default realClock
   */
  clock?: Clock;
  /**
   * This replica's share when the operator is sharded: the primary kind is cached through
   * `filter`, and so are namespaced owned kinds when `owned` (sharding by namespace, where
   * children share their owner's shard).
   * @default every object
   */
  shard?: { filter: ShardFilter; owned: boolean };
  /**
   * How long the next reconcile of a primary waits for the cache to show the writes the
   * last one made (read-your-own-writes) before it runs without them.
   * @default 5000
   */
  cacheLagTimeoutMs?: number;
  /**
   * Serve real changes first: keys from an informer's first list (a start, a leader
   * takeover, a shard hand-off), from resyncs and from `requeue(ms)` wait behind keys from
   * real changes, as with controller-runtime's priority queue. `false` is one FIFO.
   * @default true
   */
  priorityQueue?: boolean;
  /**
   * Leave the controller's optional kinds (`isOptionalKind`: not built in, not `required`)
   * uncached until `ControllerRuntime.served` says they are served, as
   * the manager does; meanwhile reads of them answer nothing. `false` caches every kind at
   * once.
   * @default false
   */
  deferOptional?: boolean;
  /**
   * The name of the cluster this runtime serves when a fleet runs the controller over many
   * clusters: `ctx.cluster`, and a `cluster` property on every log line.
   * @default one cluster (`ctx.cluster` is `undefined`)
   */
  cluster?: string;
}

/** The stages of one controller, as {@linkcode assemble} wires them, and the queue's. */
export interface Stages<T extends KubeObject> {
  readonly queue: WorkQueue<string>;
  readonly informers: ControllerInformers<T>;
  readonly sources: Sources<T>;
  readonly gate: WriteGate;
  readonly workers: Workers<T>;
  readonly background: Background<T>;
  readonly events: EventRecorder;
}

/**
 * Builds the stages of one controller and wires each to the next: sources → write gate →
 * queue → workers, with the background tasks beside them.
 *
 * @param controller The controller.
 * @param options The runtime's options.
 * @param log The controller's logger.
 * @param clock The clock of the queue and the waits.
 * @param signal Aborts every attempt (shutdown gave up waiting).
 * @returns The stages.
 */
export function assemble<T extends KubeObject>(
  controller: Controller<T>,
  options: ControllerRuntimeOptions,
  log: Logger,
  clock: Clock,
  signal: AbortSignal,
): Stages<T> {
  const { client, metrics } = options;
  const name = controller.name;
  const events = options.events ?? new EventRecorder(client, { component: name });
  const queue = new WorkQueue<string>({
    name,
    clock,
    rateLimiter: ownDelays(controller)
      ? retryRateLimiter(controller.retry!, clock)
      : options.rateLimiter,
    metrics: metrics?.workqueue?.(name),
    priorities: options.priorityQueue ?? true,
  });
  const intake = new Intake(queue, name, metrics);
  const informers = new ControllerInformers<T>({
    controller,
    factory: options.informers,
    namespaces: options.namespaces?.length ? options.namespaces : undefined,
    shard: options.shard,
  });
  const gate = new WriteGate({
    controller: name,
    primary: controller.resource,
    kinds: controller.caches,
    reader: informers.reader,
    clock,
    lagTimeoutMs: options.cacheLagTimeoutMs ?? 5_000,
    metrics,
    shard: options.shard,
    log,
    intake,
  });
  const background: Background<T> = new Background<T>({
    controller: name,
    timers: controller.timers ?? [],
    daemons: controller.daemons ?? [],
    clock,
    log,
    client,
    metrics,
    get: (key) => informers.get(key),
    reconciling: (key) => workers.busy(key),
    cache: (namespace) => informers.reader.withDefaultNamespace(namespace),
  });
  const deferOptional = options.deferOptional ?? false;
  const sources = new Sources<T>({
    controller,
    informers,
    gate,
    background,
    intake,
    deferOptional,
    metrics,
    log,
  });
  const workers: Workers<T> = new Workers<T>({
    controller,
    client,
    events,
    log,
    clock,
    queue,
    informers,
    gate,
    background,
    causes: intake.causes,
    metrics,
    cluster: options.cluster,
    signal,
    attempted: () => sources.syncWatches(),
  });
  return { queue, informers, sources, gate, workers, background, events };
}

/** Whether the controller's `retry` sets its own delays (then they make its rate limiter). */
function ownDelays(controller: Controller<any>): boolean {
  const own = controller.retryOptions;
  return own?.baseDelayMs !== undefined || own?.maxDelayMs !== undefined;
}
