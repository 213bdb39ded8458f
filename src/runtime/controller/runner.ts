/**
 * `ControllerRuntime`: runs one {@linkcode Controller} (made by `reconcile()`) against
 * shared informers and a `WorkQueue<string>` of primary keys. A manager creates one per
 * controller; use it directly only to run a controller without a manager.
 *
 * ## Flow
 *
 * Constructing the runtime asks the informer factory for every kind the controller caches
 * (`controller.caches`: primary, owned, watched and read kinds, each with its scope and
 * indexes; one informer per namespace when scoped to namespaces) and adds handlers that turn
 * events into keys: primary events that pass the predicates enqueue the object's key; owned
 * objects enqueue the primary their controller ownerReference names (old and new owner on
 * update); watched objects enqueue what their map function returns (it may read the cache).
 * Read kinds get no handler. `ctx.cache` and map functions read those informers. `start()` waits until
 * those caches have synced, then runs `maxConcurrent` workers. `stop()` stops taking new
 * keys, waits for in-flight reconciles up to a deadline, and removes the handlers.
 *
 * ## Guarantees
 *
 * - A key is never reconciled by two workers at once (the work queue's promise).
 * - No reconcile starts before the controller's caches have synced, or after `stop()`.
 * - Objects absent from the cache are not reconciled.
 * - Each reconcile gets its own copy of the primary; cached objects stay frozen.
 * - With a `shard`, the primary's informers cache only this replica's share (and owned
 *   kinds' too when `shard.owned`): objects outside it are not reconciled here, and
 *   {@linkcode ControllerRuntime.prototype.idle} says when the reconciles of a share that
 *   left have ended.
 * - The controller's own writes coming back as events cause no writes: `ctx.apply` of an
 *   owned object it applied just so, which the cache still holds with those fields, and a
 *   status patch it already wrote, are not sent again. A change by anyone else — to the
 *   primary or an owned object, or its deletion — is reconciled and written as before.
 * - Read-your-own-writes: every write made through the reconcile context (apply, create,
 *   update, patch, delete, status, finalizer add and removal) records the resourceVersion
 *   the server returned. The next reconcile of that primary starts only once the cache
 *   shows each of them (compared as integers, KEP-5504), so it never acts on a state older
 *   than its own writes: a created object is there, a deleted one is gone. The key waits
 *   without holding a worker, up to `cacheLagTimeoutMs`; past it the write is logged, counted
 *   (`kubeno_controller_cache_lag_total{outcome="expired"}`) and the reconcile runs anyway,
 *   with `ctx.cache` still showing the write as the server answered it.
 * - A watch event that is exactly one of the controller's own writes (its echo) starts no
 *   reconcile of the primary that wrote it; a change by anyone else in between does. So a
 *   failing reconcile's own partial writes never cut its backoff short.
 * - A write of the primary refused with 409 Conflict (someone else changed it) is retried
 *   after the work queue's backoff, once the cache shows the state the server holds now.
 *
 * @module
 */
import { getLogger } from "../../util/log.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import type { Client } from "../../client/client.ts";
import { EventRecorder } from "./events.ts";
import { finalizer } from "./finalizer.ts";
import { deepFreeze } from "../../util/freeze.ts";
import type { Informer } from "../cache/informer.ts";
import { type CachedSource, InformerReader } from "../cache/reader.ts";
import { isMetadataOnly } from "../../core/metadata_only.ts";
import type { CachedKind } from "./caches.ts";
import type { InformerFactory } from "../cache/informer_factory.ts";
import type { ShardFilter } from "../cache/shard_filter.ts";
import type { KubeObject } from "../../core/object.ts";
import { controllerOf } from "../../core/owner.ts";
import type { ObjectEvent } from "../watch/watch.ts";
import type { RateLimiter } from "../queue/rate_limiter.ts";
import { type Controller, type ReconcileResult, TerminalError } from "./reconcile.ts";
import type { Resource } from "../../core/resource.ts";
import { objectKey, parseObjectKey } from "../../core/object_key.ts";
import { WorkQueue, type WorkQueueMetrics } from "../queue/workqueue.ts";
import { createContext, type TrackedWrite } from "./_context.ts";
import { WriteMemory } from "./_write_memory.ts";
import { type CacheView, isEcho, type OwnWrite, OwnWrites } from "./_own_writes.ts";
import type { TimerId } from "../../util/clock.ts";

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
 * passed first).
 */
export type QueueCause =
  | "primary"
  | "owns"
  | "watches"
  | "requeue"
  | "error"
  | "cache"
  | "cache-timeout";

/**
 * Metrics hooks of controllers, mapping to controller-runtime's metrics. Hooks run
 * synchronously; they must be cheap and must not throw.
 */
export interface ControllerMetricsHooks {
  /** A key was put in the queue, and why: `kubeno_controller_queue_adds_total{cause}`. */
  queued?(controller: string, cause: QueueCause): void;
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
  /** Workers busy now: `controller_runtime_active_workers`. */
  activeWorkers?(controller: string, active: number): void;
  /** Hooks for the controller's work queue (`workqueue_*{name=controller}`). */
  workqueue?(controller: string): WorkQueueMetrics<string> | undefined;
}

/** Options of {@linkcode ControllerRuntime}. */
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
   * Rate limiter of the work queue.
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
}

type Handlers = () => void;
const SEP = "\u0001";

/** Writes of one kind a primary's reconcile is sending, and the events that came meanwhile. */
interface Sending {
  count: number;
  events: { ev: ObjectEvent<KubeObject>; cause: QueueCause }[];
  answers: { key: string; op: OwnWrite["op"]; rv: string | undefined; base: string | undefined }[];
}
const RESYNC_RETRY_MS = 1_000;

/**
 * Runs one controller. See the module docs for the flow and guarantees.
 *
 * @typeParam T The primary object type.
 *
 * @example Running a controller without a manager
 * ```ts ignore — needs a live API server
 * import { ControllerRuntime } from "./runner.ts";
 * import { reconcile } from "./reconcile.ts";
 * import { InformerFactory } from "../cache/informer_factory.ts";
 * import { createClient } from "../../client/client.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 *
 * using client = await createClient();
 * await using informers = new InformerFactory({ client });
 * const runtime = new ControllerRuntime(
 *   reconcile(ConfigMap, { reconcile: (cm, ctx) => ctx.log.info("Saw {key}", { key: ctx.key }) }),
 *   { client, informers },
 * );
 * informers.start();
 * await runtime.start();
 * // ... later
 * await runtime.stop(30_000);
 * ```
 */
export class ControllerRuntime<T extends KubeObject> {
  /** The controller run. */
  readonly controller: Controller<T>;
  /** The work queue of primary keys. */
  readonly queue: WorkQueue<string>;
  readonly #client: Client;
  readonly #events: EventRecorder;
  readonly #metrics?: ControllerMetricsHooks;
  readonly #namespaces?: readonly string[];
  readonly #primary: Informer<T>[];
  readonly #primaryNamespaces: readonly string[] | undefined;
  readonly #reader: InformerReader;
  readonly #all: Informer<any>[] = [];
  readonly #removers: Handlers[] = [];
  readonly #abort = new AbortController();
  readonly #stopStart = new AbortController();
  readonly #log;
  readonly #clock: Clock;
  readonly #workers: Promise<void>[] = [];
  readonly #memory = new WriteMemory();
  readonly #shard: ControllerRuntimeOptions["shard"];
  // Primaries being reconciled, by key, and who waits for some of them to end.
  readonly #inFlight = new Map<string, KubeObject>();
  readonly #idleWaiters = new Set<{ busy: () => boolean; resolve: () => void }>();
  readonly #owned: Set<string>;
  // Read-your-own-writes: writes the cache has not shown, keys waiting for them.
  readonly #writes = new OwnWrites();
  readonly #deferred = new Map<string, TimerId>();
  readonly #lagTimeoutMs: number;
  readonly #tracked = new Map<string, CachedKind>();
  readonly #view: CacheView;
  // Writes being sent, by primary and kind: their events wait for the answers, to tell an
  // echo (which may arrive before the answer) from news.
  readonly #sending = new Map<string, Sending>();
  #active = 0;
  #started = false;
  #stopping = false;

  /**
   * Gets the informers the controller needs from `options.informers` and starts queueing
   * keys from their events; no reconcile runs before {@linkcode ControllerRuntime.prototype.start}.
   *
   * @param controller The controller, from `reconcile()`.
   * @param options Client, informer factory, namespaces, metrics, rate limiter, recorder.
   */
  constructor(controller: Controller<T>, options: ControllerRuntimeOptions) {
    this.controller = controller;
    this.#client = options.client;
    this.#metrics = options.metrics;
    this.#namespaces = options.namespaces?.length ? options.namespaces : undefined;
    this.#events = options.events ??
      new EventRecorder(options.client, { component: controller.name });
    this.#log = getLogger(["kubeno", "controller", controller.name]);
    this.#clock = options.clock ?? realClock;
    this.#shard = options.shard;
    this.#lagTimeoutMs = options.cacheLagTimeoutMs ?? 5_000;
    this.queue = new WorkQueue<string>({
      name: controller.name,
      clock: this.#clock,
      rateLimiter: options.rateLimiter,
      metrics: options.metrics?.workqueue?.(controller.name),
    });
    const { informers } = options;
    const sources = new Map<string, CachedSource>();
    for (const kind of controller.caches) {
      sources.set(kindKey(kind.resource), this.#scoped(informers, kind));
    }
    const cached = (res: Resource<any>) => sources.get(kindKey(res))!;
    for (const kind of controller.caches) this.#tracked.set(trackKind(kind.resource), kind);
    this.#view = {
      lookup: (kind, key) => {
        const res = this.#tracked.get(kind)?.resource;
        const inf = res && this.#reader.informerOf(res, parseObjectKey(key).namespace);
        return inf && { object: inf.store.get(key), watermark: inf.store.resourceVersion };
      },
    };
    this.#reader = new InformerReader([...sources.values()], {
      owner: `controller "${controller.name}"`,
      hint: (res) => {
        const k = isMetadataOnly(res) ? `metadataOnly(${res.kind})` : res.kind;
        return `add it to reads: [${k}] (or to owns or watches), or read it uncached through ctx.client`;
      },
    });
    const primarySource = cached(controller.resource);
    this.#primary = primarySource.informers as Informer<T>[];
    this.#primaryNamespaces = primarySource.namespaces;
    const primaryKind = trackKind(controller.resource);
    for (const inf of this.#primary) {
      this.#watch(inf, (ev) => {
        const key = objectKey(ev.object);
        const echoes = this.#observe(primaryKind, ev);
        if (ev.type === "deleted") {
          this.#memory.forgetStatus(key);
          this.#writes.forget(key);
          this.#undefer(key);
        }
        if (echoes.has(key) || controller.predicates.every((p) => p(ev))) {
          this.#queue(key, echoes, "primary", primaryKind, ev);
        }
      });
    }
    const primary = controller.resource;
    this.#owned = new Set(controller.owns.map(kindKey));
    for (const owned of controller.owns) {
      const kind = trackKind(owned);
      for (const inf of cached(owned).informers) {
        this.#watch(inf, (ev) => {
          const echoes = this.#observe(kind, ev);
          if (ev.type === "deleted") this.#memory.forgetApplied(ownedKey(owned, ev.object));
          const keys = new Set<string>();
          for (const obj of ev.type === "modified" && ev.old ? [ev.old, ev.object] : [ev.object]) {
            const ref = controllerOf(obj);
            if (!ref || ref.kind !== primary.kind || groupOf(ref.apiVersion) !== primary.group) {
              continue;
            }
            const namespace = primary.namespaced ? obj.metadata.namespace : undefined;
            keys.add(objectKey({ namespace, name: ref.name }));
          }
          this.#enqueue(keys, echoes, "owns", kind, ev);
        });
      }
    }
    // Read kinds queue nothing, but their events confirm the writes this controller made.
    for (const kind of controller.caches) {
      if (kind.roles.some((r) => r !== "reads")) continue;
      const tk = trackKind(kind.resource);
      for (const inf of cached(kind.resource).informers) {
        this.#watch(inf, (ev) => void this.#observe(tk, ev));
      }
    }
    for (const w of controller.watches) {
      const kind = trackKind(w.resource);
      for (const inf of cached(w.resource).informers) {
        this.#watch(inf, (ev) => {
          const echoes = this.#observe(kind, ev);
          if (!(w.predicates ?? []).every((p) => p(ev))) return;
          const keys = new Set<string>();
          for (const obj of ev.type === "modified" && ev.old ? [ev.old, ev.object] : [ev.object]) {
            for (const k of w.map(obj, this.#reader)) {
              keys.add(typeof k === "string" ? k : objectKey(k));
            }
          }
          this.#enqueue(keys, echoes, "watches", kind, ev);
        });
      }
    }
  }

  /**
   * Reads the controller's cache, as `ctx.cache` does (without a default namespace).
   *
   * @returns The reader.
   */
  get cache(): InformerReader {
    return this.#reader;
  }

  /**
   * The informers this controller reads, for health and readiness.
   *
   * @returns The distinct informers (shared with other controllers).
   */
  get informers(): readonly Informer<any>[] {
    return this.#all;
  }

  /**
   * Whether every informer of this controller has synced.
   *
   * @returns `true` once all have.
   */
  get synced(): boolean {
    return this.#all.every((inf) => inf.hasSynced);
  }

  /**
   * Whether the workers are running.
   *
   * @returns `true` after `start()` resolved and before `stop()`.
   */
  get running(): boolean {
    return this.#started && !this.#stopping;
  }

  /**
   * Waits for the controller's caches to sync (retrying while an informer fails
   * persistently, e.g. a missing CRD or permission), then starts the workers.
   * The informers must be started (e.g. by `InformerFactory.start()`).
   *
   * @param signal Stops waiting for the caches.
   * @returns A promise that resolves once the workers run.
   * @throws The signal's reason when it aborts first, or an `Error` when stopped first.
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.#started) return;
    const wait = signal
      ? AbortSignal.any([signal, this.#stopStart.signal])
      : this.#stopStart.signal;
    for (;;) {
      try {
        await Promise.all(this.#all.map((inf) => inf.synced({ signal: wait })));
        break;
      } catch (err) {
        if (wait.aborted) throw wait.reason;
        this.#log.error("Controller {controller} cannot sync its caches yet: {error}", {
          controller: this.controller.name,
          error: err instanceof Error ? err.message : String(err),
        });
        await this.#clock.sleep(RESYNC_RETRY_MS, wait).catch(() => {});
        if (wait.aborted) throw wait.reason;
      }
    }
    if (this.#stopping) {
      throw new Error(`Cannot start controller "${this.controller.name}": stopped`);
    }
    this.#started = true;
    this.#log.info("Controller {controller} started with {workers} workers", {
      controller: this.controller.name,
      workers: this.controller.maxConcurrent,
    });
    for (let i = 0; i < this.controller.maxConcurrent; i++) this.#workers.push(this.#work());
  }

  /**
   * Stops taking new keys, removes the event handlers and waits up to `timeoutMs` for
   * in-flight reconciles. After the deadline their `ctx.signal` is aborted and this returns
   * without them. Calling it again waits again.
   *
   * @param timeoutMs How long to wait for in-flight reconciles.
   * @returns `true` when every in-flight reconcile finished in time.
   */
  async stop(timeoutMs = 30_000): Promise<boolean> {
    this.#stopping = true;
    this.#stopStart.abort(new Error(`Controller "${this.controller.name}" was stopped`));
    for (const remove of this.#removers.splice(0)) remove();
    for (const key of [...this.#deferred.keys()]) this.#undefer(key);
    const timeout = new AbortController();
    const timedOut = this.#clock.sleep(timeoutMs, timeout.signal).then(() => false, () => false);
    const drained = Promise.all([this.queue.shutDownWithDrain(), ...this.#workers]).then(() =>
      true
    );
    const ok = await Promise.race([drained, timedOut]);
    timeout.abort();
    if (!ok) {
      this.#log.warn(
        "Controller {controller} gave up waiting for {active} reconciles after {timeoutMs} ms",
        { controller: this.controller.name, active: this.#active, timeoutMs },
      );
      this.#abort.abort(new Error(`Controller "${this.controller.name}" shutdown timed out`));
    }
    await Promise.race([this.#events.flush(), this.#clock.sleep(0)]);
    return ok;
  }

  /**
   * Waits until no reconcile of a primary matching `matches` is in flight, e.g. of a share of
   * the objects that just left this replica's cache (no new reconcile of those starts).
   *
   * @param matches Which primaries to wait for.
   * @returns A promise that resolves once none is being reconciled.
   */
  idle(matches: (obj: KubeObject) => boolean): Promise<void> {
    const busy = () => [...this.#inFlight.values()].some(matches);
    if (!busy()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.add({ busy, resolve }));
  }

  #scoped(factory: InformerFactory, kind: CachedKind): CachedSource {
    const res = kind.resource;
    const namespaces = res.namespaced ? kind.namespaces ?? this.#namespaces : undefined;
    const prefix = `${this.controller.name}/`;
    const shard = this.#shard;
    const sharded = shard &&
      (kind.roles.includes("primary") ||
        (shard.owned && res.namespaced && kind.roles.includes("owns")));
    const query = {
      ...(sharded ? { shard: shard.filter } : {}),
      labelSelector: kind.labelSelector,
      fieldSelector: kind.fieldSelector,
      transform: kind.transform,
      // Index names are the controller's own: two controllers may both name one "byOwner".
      indexes: Object.fromEntries(
        Object.entries(kind.indexes).map(([name, fn]) => [prefix + name, fn]),
      ),
    };
    const informers = namespaces
      ? namespaces.map((namespace) => factory.for(res, { ...query, namespace }))
      : [factory.for(res, query)];
    for (const inf of informers) if (!this.#all.includes(inf)) this.#all.push(inf);
    return {
      resource: res,
      informers,
      ...(namespaces ? { namespaces } : {}),
      indexes: Object.fromEntries(Object.keys(kind.indexes).map((name) => [name, prefix + name])),
    };
  }

  // One add per key and event: the old and new state of an object usually map to the same
  // primaries, and a key handed to a waiting worker by the first add would be queued again
  // by the second. A primary whose own write this event is the echo of is not queued.
  // An event for a primary that is sending a write of this kind waits for the answer.
  #enqueue(
    keys: Set<string>,
    echoes: ReadonlySet<string>,
    cause: QueueCause,
    kind: string,
    ev: ObjectEvent<KubeObject>,
  ): void {
    for (const k of keys) this.#queue(k, echoes, cause, kind, ev);
  }

  #queue(
    key: string,
    echoes: ReadonlySet<string>,
    cause: QueueCause,
    kind: string,
    ev: ObjectEvent<KubeObject>,
  ): void {
    if (echoes.has(key)) return this.#metrics?.echo?.(this.controller.name);
    const sending = this.#sending.get(key + SEP + kind);
    if (sending) sending.events.push({ ev, cause });
    else this.#add(key, cause);
  }

  /** A write of `res` made while reconciling `primary` is about to be sent. */
  #begin(primary: string, res: Resource<any>): (w: TrackedWrite | undefined) => void {
    const id = primary + SEP + trackKind(res);
    let sending = this.#sending.get(id);
    if (!sending) this.#sending.set(id, sending = { count: 0, events: [], answers: [] });
    const s = sending;
    s.count++;
    let settled = false;
    return (w) => {
      if (settled) return;
      settled = true;
      if (w) {
        this.#record(primary, res, w);
        s.answers.push({
          key: objectKey({ name: w.name, namespace: w.namespace }),
          op: w.op,
          rv: w.answer?.metadata.resourceVersion,
          base: w.base,
        });
      }
      if (--s.count > 0) return;
      this.#sending.delete(id);
      // Events that came while the writes were on their way: echoes of them, or news.
      let news: QueueCause | undefined;
      for (const { ev, cause } of s.events) {
        const key = objectKey(ev.object);
        const old = ev.type === "modified" ? ev.old?.metadata.resourceVersion : undefined;
        const echo = s.answers.some((a) =>
          a.key === key && isEcho(a, ev.type, ev.object.metadata.resourceVersion, old)
        );
        if (echo) this.#metrics?.echo?.(this.controller.name);
        else news ??= cause;
      }
      if (news) this.#add(primary, news);
    };
  }

  #add(key: string, cause: QueueCause): void {
    this.#metrics?.queued?.(this.controller.name, cause);
    this.queue.add(key);
  }

  /**
   * Takes in one event of a cached kind: confirms the controller's writes it shows, wakes
   * the keys that waited for them, and returns the primaries it is the echo of.
   */
  #observe<U extends KubeObject>(kind: string, ev: ObjectEvent<U>): ReadonlySet<string> {
    const { echoes, touched } = this.#writes.observe(
      kind,
      ev.type,
      ev.object,
      ev.type === "modified" ? ev.old : undefined,
    );
    for (const key of touched) if (this.#deferred.has(key)) this.#wake(key);
    return echoes;
  }

  /** Records a write made while reconciling `primary`, when the cache will show it. */
  #record(primary: string, res: Resource<any>, w: TrackedWrite): void {
    const kind = trackKind(res);
    const cachedKind = this.#tracked.get(kind);
    if (!cachedKind || !this.#reader.informerOf(cachedKind.resource, w.namespace)) return;
    const answer = w.answer;
    // Only writes the cache will show: not one outside its label selector or shard (a field
    // selector cannot be judged here, so such a kind is not waited for).
    if (cachedKind.fieldSelector) return;
    if (answer && cachedKind.labelSelector) {
      const selector = { labelSelector: cachedKind.labelSelector };
      if (!this.#reader.matches(cachedKind.resource, answer, selector)) return;
    }
    const shard = this.#shard;
    if (answer && shard && this.#sharded(cachedKind) && !shard.filter.matches(answer)) return;
    const isPrimary = kind === trackKind(this.controller.resource);
    this.#writes.record(primary, {
      kind,
      key: objectKey({ name: w.name, namespace: w.namespace }),
      op: w.op,
      rv: answer?.metadata.resourceVersion,
      base: w.base,
      uid: w.uid,
      // What ctx.cache shows until the cache has it; the primary is the context's own.
      object: answer && !isPrimary ? deepFreeze(structuredClone(answer)) : undefined,
      at: this.#clock.now(),
    });
  }

  #sharded(kind: CachedKind): boolean {
    return kind.roles.includes("primary") ||
      (!!this.#shard?.owned && kind.resource.namespaced && kind.roles.includes("owns"));
  }

  /** Puts `key` aside until the cache shows `waiting` (or the bound passes). */
  #defer(key: string, waiting: readonly OwnWrite[]): void {
    if (this.#deferred.has(key)) return;
    this.#metrics?.cacheLag?.(this.controller.name, "deferred");
    const oldest = Math.min(...waiting.map((w) => w.at));
    const due = Math.max(0, oldest + this.#lagTimeoutMs - this.#clock.now());
    this.#deferred.set(
      key,
      this.#clock.setTimeout(() => {
        if (!this.#deferred.delete(key)) return;
        this.#add(key, "cache-timeout");
      }, due),
    );
  }

  #undefer(key: string): void {
    const id = this.#deferred.get(key);
    if (id === undefined) return;
    this.#clock.clearTimeout(id);
    this.#deferred.delete(key);
  }

  /** Queues a deferred key once the cache shows every write it waited for. */
  #wake(key: string): void {
    const lag = this.#writes.lagging(key, this.#view, this.#clock.now(), this.#lagTimeoutMs);
    if (lag.waiting.length) return;
    this.#undefer(key);
    this.#add(key, "cache");
  }

  #watch<U extends KubeObject>(inf: Informer<U>, fn: (ev: ObjectEvent<U>) => void): void {
    this.#removers.push(inf.onEvent(fn));
  }

  #get(key: string): T | undefined {
    if (this.#primary.length === 1) return this.#primary[0].get(key);
    const ns = parseObjectKey(key).namespace ?? "";
    const i = this.#primaryNamespaces!.indexOf(ns);
    return i < 0 ? undefined : this.#primary[i].get(key);
  }

  async #work(): Promise<void> {
    for (;;) {
      const item = await this.queue.get();
      if (item.shutdown) return;
      const key = item.key;
      if (this.#stopping) {
        this.queue.done(key);
        continue;
      }
      this.#metrics?.activeWorkers?.(this.controller.name, ++this.#active);
      try {
        await this.#process(key);
      } finally {
        this.#ended(key);
        this.queue.done(key);
        this.#metrics?.activeWorkers?.(this.controller.name, --this.#active);
      }
    }
  }

  #ended(key: string): void {
    if (!this.#inFlight.delete(key)) return;
    for (const w of this.#idleWaiters) {
      if (w.busy()) continue;
      this.#idleWaiters.delete(w);
      w.resolve();
    }
  }

  async #process(key: string): Promise<void> {
    const cached = this.#get(key);
    if (!cached) {
      this.queue.forget(key);
      this.#writes.forget(key);
      return;
    }
    // Read-your-own-writes: not before the cache shows what the last reconciles wrote.
    const lag = this.#writes.lagging(key, this.#view, this.#clock.now(), this.#lagTimeoutMs);
    for (const w of lag.expired) {
      this.#metrics?.cacheLag?.(this.controller.name, "expired");
      this.#log.warn(
        "Cache of {kind} {object} did not show the {op} of resourceVersion {rv} by controller {controller} within {ms} ms; reconciling {key} without waiting for it",
        {
          kind: w.kind.split("\u0000")[1],
          object: w.key,
          op: w.op,
          rv: w.rv ?? "",
          controller: this.controller.name,
          ms: this.#lagTimeoutMs,
          key,
        },
      );
    }
    if (lag.waiting.length) {
      this.#defer(key, lag.waiting);
      return;
    }
    this.#undefer(key);
    // In flight from the moment it was read from the cache, with no await in between: a
    // share leaving the cache either takes this object out first or waits for it.
    this.#inFlight.set(key, cached);
    // The reconcile's own copy: it may change it; the frozen cached object stays as the
    // server's state that "nothing changed" is judged against.
    const obj = structuredClone(cached);
    const c = this.controller;
    // controller-runtime's reconcile log fields, so log queries carry over.
    const log = this.#log.with({
      controller: c.name,
      namespace: obj.metadata.namespace ?? "",
      name: obj.metadata.name,
      reconcileID: crypto.randomUUID(),
      key,
    });
    const handle = createContext({
      controller: c,
      client: this.#client,
      events: this.#events,
      log,
      key,
      primary: obj,
      cached,
      cache: this.#reader.withDefaultNamespace(obj.metadata.namespace),
      signal: this.#abort.signal,
      memory: this.#memory,
      tracking: {
        begin: (res) => this.#begin(key, res),
        pending: (res) => this.#writes.of(key, trackKind(res)),
        matches: (res, o, opts) => this.#reader.matches(res, o, opts),
      },
      owned: (kind, name, namespace) => {
        if (!this.#owned.has(kindKey(kind))) return undefined;
        const ns = kind.namespaced ? namespace : undefined;
        let cached: KubeObject | undefined;
        try {
          cached = this.#reader.get(kind, name, { namespace: ns });
        } catch {
          // Not in a namespace this controller caches: nothing to compare with.
        }
        return { key: ownedKey(kind, { metadata: { name, namespace: ns } }), cached };
      },
    });
    const ctx = handle.ctx;
    const started = performance.now();
    let result: ReconcileOutcome;
    let error: unknown;
    try {
      let r: ReconcileResult;
      if (c.finalizer) {
        // The finalizer writes go through the context: computed from and guarded by the
        // newest state it knows (the reconcile's own status writes included).
        r = await finalizer(
          this.#client,
          c.resource,
          c.finalizer,
          obj,
          (ev) =>
            ev.type === "cleanup"
              ? c.finalize!(ev.object, ctx)
              // After the add: the server's answer, which is also the context's own state.
              : c.reconcile(ev.object === obj ? obj : structuredClone(ev.object), ctx),
          { write: (patch) => handle.patchPrimary(patch) },
        );
      } else {
        r = await c.reconcile(obj, ctx);
      }
      this.queue.forget(key);
      if (r && typeof r.requeueAfterMs === "number") {
        this.#metrics?.queued?.(c.name, "requeue");
        this.queue.addAfter(key, r.requeueAfterMs);
        result = r.requeueAfterMs > 0 ? "requeue_after" : "requeue";
      } else {
        result = "success";
      }
    } catch (err) {
      error = err;
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof TerminalError) {
        result = "terminal";
        this.queue.forget(key);
        log.error("Reconcile of {key} failed and will not be retried: {error}", {
          key,
          error: message,
        });
        this.#events.warning(obj, "ReconcileFailed", message);
      } else {
        result = "error";
        this.#metrics?.queued?.(c.name, "error");
        this.queue.addRateLimited(key);
        log.warn("Reconcile of {key} failed, retry {retry}: {error}", {
          key,
          retry: this.queue.numRequeues(key),
          error: message,
        });
      }
    }
    this.#metrics?.reconcile?.({
      controller: c.name,
      key,
      result,
      seconds: (performance.now() - started) / 1000,
      ...(error !== undefined ? { error } : {}),
    });
  }
}

/** An owned object's identity in the write memory: its kind and object key. */
function ownedKey(res: Resource<any>, obj: KubeObject): string {
  return `${kindKey(res)}\u0000${objectKey(obj)}`;
}

/** A kind as the write tracker names it: full and metadata-only caches count as one. */
function trackKind(res: Resource<any>): string {
  return `${res.apiVersion}\u0000${res.kind}`;
}

function kindKey(res: Resource<any>): string {
  return `${res.apiVersion}\u0000${res.kind}\u0000${isMetadataOnly(res)}`;
}

function groupOf(apiVersion: string): string {
  const i = apiVersion.indexOf("/");
  return i < 0 ? "" : apiVersion.slice(0, i);
}
