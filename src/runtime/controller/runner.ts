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
 * These are the triggers of `_triggers.ts` (kube-rs's `trigger_self` / `trigger_owners` /
 * `trigger_with`), wired per cached kind; `_own_write_tracker.ts` filters out the echoes of
 * the controller's own writes. Read kinds get no trigger. `ctx.cache` and map functions read
 * those informers. `start()` waits until those caches have synced, then runs `maxConcurrent`
 * workers. A worker reads the key's object from the cache, builds its context
 * (`_context.ts`), runs reconcile (or finalize), and hands how it ended to one outcome switch
 * (`_outcome.ts`: forget, requeue after, retry with backoff, or not at all for a
 * `TerminalError`). With the controller's `timeoutMs`, each attempt is bounded
 * (`_attempt.ts`): when the bound passes first, the attempt's `ctx.signal` aborts with a
 * `TimeoutError` naming the key and the bound, the `timeout` hook counts it, and it goes to
 * the outcome switch as that error (logged, retried after the key's backoff) at once: the
 * worker takes the next key without waiting for the abandoned call. `stop()` stops taking
 * new keys, waits for in-flight reconciles up to a deadline, and removes the handlers.
 *
 * With `deferOptional` (the manager's way), optional kinds (`isOptionalKind`) get no informer
 * until `served(kind, true)`, and lose it on `served(kind, false)`. Keys also come from the
 * controller's external triggers (`../source/external_triggers.ts`), read once the workers
 * run; its timers and daemons (`../source/background.ts`) run per cached primary from then
 * on; `watchesFrom` adds and drops watches after each reconcile.
 *
 * With tracing on (`OTEL_DENO=true`, see `util/trace.ts`), each queued key remembers the span
 * that queued it (`_trigger_links.ts`), and each reconcile is a `reconcile` span: a child of
 * the first live watch event that queued it, linked to the other triggers merged into it
 * (later events, a list or resync, the requeue of the reconcile before), holding its API
 * calls, finalizer and log records. A reconcile cut at `timeoutMs` ends its span then; what
 * the abandoned call still does ends later, outside it.
 *
 * ## Guarantees
 *
 * - A key is never reconciled by two workers at once (the work queue's promise). With
 *   `timeoutMs`, an attempt cut at its bound may still be running when the key's retry
 *   starts, since a promise cannot be stopped from outside; but its context refuses every
 *   write once its signal aborted, so only the retry writes for the key. The next attempt
 *   waits for the cache to show what the cut one wrote before its bound, as after any
 *   attempt.
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
 * ## Honouring `ctx.signal`
 *
 * The signal aborts at the attempt's `timeoutMs` or when `stop()` gives up waiting. A
 * reconcile honours it by passing it on — `fetch(url, { signal: ctx.signal })`,
 * `ctx.client.get(res, name, { signal: ctx.signal })` and every other `ctx.client` call, its
 * own waits — and by calling `ctx.signal.throwIfAborted()` between steps of a loop. The
 * context's own writes need nothing: they pass it, and refuse to start once it aborted.
 *
 * ## Caveats
 *
 * - What a cut attempt does outside the context goes on: requests made without the signal,
 *   timers, other services. `ctx.events` is not fenced either (the recorder is shared).
 * - {@linkcode ControllerRuntime.prototype.idle} and `stop()` count a cut attempt as ended.
 *
 * @module
 */
import { getLogger, type Logger } from "../../util/log.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import type { Client } from "../../client/client.ts";
import { EventRecorder } from "./events.ts";
import { finalizer } from "./finalizer.ts";
import type { Informer, InformerEventInfo } from "../cache/informer.ts";
import { type CachedSource, InformerReader } from "../cache/reader.ts";
import { isMetadataOnly } from "../../core/metadata_only.ts";
import { kindKey } from "../../core/kind_key.ts";
import { type CachedKind, isOptionalKind } from "./caches.ts";
import type { InformerFactory, InformerHold } from "../cache/informer_factory.ts";
import type { ShardFilter } from "../cache/shard_filter.ts";
import type { KubeObject } from "../../core/object.ts";
import type { ObjectEvent } from "../watch/watch.ts";
import type { RateLimiter } from "../queue/rate_limiter.ts";
import type { ClusterScope, Controller, ReconcileResult, WatchSpec } from "./reconcile.ts";
import type { Resource } from "../../core/resource.ts";
import { parseObjectKey } from "../../core/object_key.ts";
import { DEFAULT_PRIORITY, LOW_PRIORITY, WorkQueue } from "../queue/workqueue.ts";
import { type ContextHandle, createContext } from "./_context.ts";
import { appliedKey, WriteMemory } from "./_write_memory.ts";
import { isSharded, OwnWriteTracker, trackKey } from "./_own_write_tracker.ts";
import type { ControllerMetricsHooks, QueueCause, ReconcileOutcome } from "./metrics_hooks.ts";
import { enqueueMapped, enqueueOwners, enqueueSelf, passes } from "./_triggers.ts";
import { settle, type Settled } from "./_outcome.ts";
import { boundedAttempt } from "./_attempt.ts";
import { runTrigger } from "../source/external_triggers.ts";
import { Background } from "../source/background.ts";
import { activeLink, inSpan, tracing } from "../../util/trace.ts";
import { TriggerLinks } from "./_trigger_links.ts";
import { dataCopy } from "../../util/freeze.ts";

export type {
  BackgroundSample,
  ControllerMetricsHooks,
  QueueCause,
  ReconcileOutcome,
  ReconcileSample,
} from "./metrics_hooks.ts";

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
  /**
   * Serve real changes first: keys from an informer's first list (a start, a leader
   * takeover, a shard hand-off), from resyncs and from `requeue(ms)` wait behind keys from
   * real changes, as with controller-runtime's priority queue. `false` is one FIFO.
   * @default true
   */
  priorityQueue?: boolean;
  /**
   * Leave the controller's optional kinds (`isOptionalKind`: not built in, not `required`)
   * uncached until {@linkcode ControllerRuntime.prototype.served} says they are served, as
   * the manager does; meanwhile reads of them answer nothing. `false` caches every kind at
   * once.
   * @default false
   */
  deferOptional?: boolean;
  /**
   * The cluster this runtime serves when a fleet runs the controller over many clusters:
   * `ctx.cluster` and `ctx.hub`, a `cluster` property on every log line.
   * @default one cluster (`ctx.cluster` is `undefined`)
   */
  cluster?: ClusterScope;
}

/** Removes what it was returned for: an event handler, the wiring of a kind. */
type Unsubscribe = () => void;
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
  readonly #cluster: ClusterScope | undefined;
  readonly #events: EventRecorder;
  readonly #metrics?: ControllerMetricsHooks;
  readonly #namespaces?: readonly string[];
  readonly #primary: Informer<T>[];
  readonly #primaryNamespaces: readonly string[] | undefined;
  readonly #reader: InformerReader;
  readonly #factory: InformerFactory;
  readonly #all: Informer<any>[] = [];
  // The wiring of each cached kind, by kind key.
  readonly #wired = new Map<string, Unsubscribe>();
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
  readonly #sources = new Map<string, CachedSource>();
  // Optional kinds left out until served, by kind key, with their holds while cached.
  readonly #optional = new Map<string, { kind: CachedKind; holds?: InformerHold<any>[] }>();
  // Read-your-own-writes and echo filtering.
  readonly #writes: OwnWriteTracker;
  // Watches added from `watchesFrom`, by kind key: what `addWatch` returned.
  readonly #dynamic = new Map<string, Promise<{ remove(): Promise<void> } | undefined>>();
  // Timers and daemons per cached primary.
  readonly #background: Background<T>;
  // What queued each key since its last reconcile, as span links (only when tracing).
  readonly #triggers = new TriggerLinks();
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
    this.#cluster = options.cluster;
    this.#metrics = options.metrics;
    this.#namespaces = options.namespaces?.length ? options.namespaces : undefined;
    this.#events = options.events ??
      new EventRecorder(options.client, { component: controller.name });
    this.#log = getLogger(["kubeno", "controller", controller.name]);
    this.#clock = options.clock ?? realClock;
    this.#shard = options.shard;
    this.queue = new WorkQueue<string>({
      name: controller.name,
      clock: this.#clock,
      rateLimiter: options.rateLimiter,
      metrics: options.metrics?.workqueue?.(controller.name),
      priorities: options.priorityQueue ?? true,
    });
    this.#factory = options.informers;
    for (const kind of controller.caches) {
      const key = kindKey(kind.resource);
      if (options.deferOptional && isOptionalKind(kind)) {
        this.#optional.set(key, { kind });
        this.#sources.set(key, { resource: kind.resource, informers: [] });
        this.#metrics?.kindServed?.(controller.name, kind.resource, false);
        continue;
      }
      this.#sources.set(key, this.#scoped(kind));
    }
    // Over the live map: a watch added at run time is readable at once.
    this.#reader = new InformerReader(this.#sources, {
      owner: `controller "${controller.name}"`,
      hint: (res) => {
        const k = isMetadataOnly(res) ? `metadataOnly(${res.kind})` : res.kind;
        return `add it to reads: [${k}] (or to owns or watches), or read it uncached through ctx.client`;
      },
    });
    const primarySource = this.#sources.get(kindKey(controller.resource))!;
    this.#primary = primarySource.informers as Informer<T>[];
    this.#primaryNamespaces = primarySource.namespaces;
    this.#writes = new OwnWriteTracker({
      controller: controller.name,
      primary: controller.resource,
      kinds: controller.caches,
      reader: this.#reader,
      clock: this.#clock,
      lagTimeoutMs: options.cacheLagTimeoutMs ?? 5_000,
      metrics: this.#metrics,
      shard: this.#shard,
      log: this.#log,
      add: (key, cause, priority) => this.#add(key, cause, priority),
    });
    this.#owned = new Set(controller.owns.map((res) => kindKey(res)));
    this.#background = new Background<T>({
      controller: controller.name,
      timers: controller.timers ?? [],
      daemons: controller.daemons ?? [],
      clock: this.#clock,
      log: this.#log,
      client: this.#client,
      metrics: this.#metrics,
      get: (key) => this.#get(key),
      reconciling: (key) => this.#inFlight.has(key),
      cache: (namespace) => this.#reader.withDefaultNamespace(namespace),
    });
    for (const kind of controller.caches) {
      const key = kindKey(kind.resource);
      if (!this.#optional.has(key)) this.#wired.set(key, this.#wire(kind));
    }
  }

  /**
   * The optional kinds this runtime leaves out until served (with `deferOptional`).
   *
   * @returns Their resources.
   */
  get optionalKinds(): readonly Resource<any>[] {
    return [...this.#optional.values()].map((o) => o.kind.resource);
  }

  /**
   * The optional kinds not cached now, because the API server does not serve them.
   *
   * @returns Their resources.
   */
  get missingKinds(): readonly Resource<any>[] {
    return [...this.#optional.values()].filter((o) => !o.holds).map((o) => o.kind.resource);
  }

  /**
   * Starts or stops caching an optional kind as the API server starts or stops serving it.
   * Served: its informers are held from the factory and wired as declared (`owns`,
   * `watches`, `reads`); their first list triggers what it maps to, as at start. Not
   * served: its handlers are removed, reads of it answer nothing, and its informers are
   * released (stopped when no one else holds them). Kinds that are not optional, and a
   * state it is already in, are ignored.
   *
   * @param res An optional kind of this controller.
   * @param served Whether the API server serves it now.
   * @returns A promise that resolves once its informers are held or released.
   */
  async served(res: Resource<any>, served: boolean): Promise<void> {
    const key = kindKey(res);
    const opt = this.#optional.get(key);
    if (!opt || served === !!opt.holds || (served && this.#stopping)) return;
    const what = { controller: this.controller.name, kind: `${res.kind} (${res.apiVersion})` };
    this.#metrics?.kindServed?.(this.controller.name, res, served);
    if (served) {
      const holds: InformerHold<any>[] = [];
      this.#sources.set(key, this.#scoped(opt.kind, holds));
      opt.holds = holds;
      this.#wired.set(key, this.#wire(opt.kind));
      this.#log.info("Controller {controller} caches {kind}: the API server serves it", what);
      // A reconcile that ran without the kind (e.g. could not apply it) runs again with it,
      // once its cache holds what the server has.
      void Promise.all(holds.map((h) => h.informer.synced({ signal: this.#stopStart.signal })))
        .then(() => void this.reconcileAll("served"), () => {});
      return;
    }
    const holds = opt.holds ?? [];
    opt.holds = undefined;
    this.#wired.get(key)?.();
    this.#wired.delete(key);
    const gone = this.#sources.get(key)?.informers ?? [];
    this.#sources.set(key, { resource: res, informers: [] });
    for (const inf of gone) {
      const i = this.#all.indexOf(inf);
      if (i >= 0) this.#all.splice(i, 1);
    }
    this.#log.warn(
      "Controller {controller} runs without {kind}: the API server does not serve it",
      what,
    );
    await Promise.all(holds.map((h) => h.release()));
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
    const { maxConcurrent, reservedWorkers = 0 } = this.controller;
    this.#log.info("Controller {controller} started with {workers} workers", {
      controller: this.controller.name,
      workers: maxConcurrent,
      reservedWorkers,
    });
    // The last `reservedWorkers` take only changes, so low-priority keys never hold them all.
    for (let i = 0; i < maxConcurrent; i++) {
      this.#workers.push(this.#work(i >= maxConcurrent - reservedWorkers));
    }
    this.#background.start(this.#primary.flatMap((inf) => inf.store.keys()));
    for (const trigger of this.controller.triggers ?? []) {
      void runTrigger(trigger, {
        enqueue: (key) => this.enqueue(key),
        reconcileAll: () => void this.reconcileAll(),
        failed: (error) =>
          this.#log.error("Controller {controller} stopped reading a trigger: {error}", {
            controller: this.controller.name,
            error: error instanceof Error ? error.message : String(error),
          }),
      }, this.#stopStart.signal);
    }
  }

  /**
   * Stops taking new keys, removes the event handlers and waits up to `timeoutMs` for
   * in-flight reconciles. After the deadline their `ctx.signal` is aborted and this returns
   * without them. Calling it again waits again.
   *
   * @param timeoutMs How long to wait for in-flight reconciles (and for daemons to end).
   * @param why Why, for the daemons' signal: `"leadership lost"`, `"shutting down"`.
   * @returns `true` when every in-flight reconcile finished in time.
   */
  async stop(timeoutMs = 30_000, why = "the controller stopped"): Promise<boolean> {
    this.#stopping = true;
    const background = this.#background.stop(
      timeoutMs,
      `Controller "${this.controller.name}" stopped: ${why}`,
    );
    this.#stopStart.abort(new Error(`Controller "${this.controller.name}" was stopped`));
    for (const unsubscribe of this.#wired.values()) unsubscribe();
    this.#wired.clear();
    this.#writes.stop();
    const timeout = new AbortController();
    const timedOut = this.#clock.sleep(timeoutMs, timeout.signal).then(() => false, () => false);
    const drained = Promise.all([this.queue.shutDownWithDrain(), ...this.#workers]).then(() =>
      true
    );
    const ok = await Promise.race([drained, timedOut]) && await background;
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
   * Adds a watch while the controller runs — the equivalent of an entry of `watches`, or of
   * controller-runtime's `Controller.Watch` after start: events of `spec.resource` that pass
   * its predicates map to primary keys with `spec.map`. Its informer is shared through the
   * factory and held until `remove` runs; `ctx.cache` and map functions read it meanwhile.
   * The initial list maps every existing object, as a new source does.
   *
   * @param spec The kind, its cache scope and indexes, the map function and predicates.
   * @param options `signal` stops waiting for the informer to sync.
   * @returns Once its informer synced: `remove`, which drops the watch (its handlers, its
   * place in `ctx.cache`, and its informer when no one else holds it).
   * @throws {TypeError} When the controller already caches that kind, or was stopped.
   */
  async addWatch<U extends KubeObject>(
    spec: WatchSpec<U>,
    options: { signal?: AbortSignal } = {},
  ): Promise<{ remove(): Promise<void> }> {
    const key = kindKey(spec.resource);
    const name = `controller "${this.controller.name}"`;
    if (this.#stopping) throw new TypeError(`Cannot add a watch to ${name}: it was stopped`);
    if (this.#sources.has(key)) {
      throw new TypeError(
        `Cannot add a watch of ${spec.resource.kind} to ${name}: it already caches that kind`,
      );
    }
    const kind: CachedKind = {
      ...spec,
      roles: ["watches"],
      indexes: spec.indexes ?? {},
    };
    const holds: InformerHold<any>[] = [];
    const source = this.#scoped(kind, holds);
    this.#sources.set(key, source);
    this.#wired.set(key, this.#wire(kind, [spec]));
    let removed: Promise<void> | undefined;
    const remove = () =>
      removed ??= (async () => {
        this.#wired.get(key)?.();
        this.#wired.delete(key);
        this.#sources.delete(key);
        for (const inf of source.informers) {
          const i = this.#all.indexOf(inf);
          if (i >= 0) this.#all.splice(i, 1);
        }
        await Promise.all(holds.map((h) => h.release()));
      })();
    try {
      await Promise.all(source.informers.map((inf) => inf.synced(options)));
    } catch (err) {
      await remove();
      throw err;
    }
    return { remove };
  }

  /**
   * Queues a primary's key from outside the informers (an external trigger: a webhook, a
   * message queue, another controller), as kube-rs's `reconcile_on` and controller-runtime's
   * `source.Channel`. Keys are deduplicated by the work queue: a key queued again before a
   * worker took it is reconciled once. A key whose object is not in the cache is dropped
   * when a worker takes it.
   *
   * @param key The primary's key, `namespace/name` (`name` for a cluster-scoped kind).
   * @param cause Counted as the queue-add cause in metrics.
   * @default cause "trigger"
   */
  enqueue(key: string, cause: QueueCause = "trigger"): void {
    if (this.#stopping) return;
    this.#add(key, cause);
  }

  /**
   * Queues every cached primary, as kube-rs's `reconcile_all_on`: after a change outside the
   * cluster that every object depends on (a rotated credential, a new config file). The keys
   * wait behind real changes, as an informer's resync does.
   *
   * @param cause Counted as the queue-add cause in metrics.
   * @returns How many keys were queued.
   * @default cause "trigger"
   */
  reconcileAll(cause: QueueCause = "trigger"): number {
    if (this.#stopping) return 0;
    let n = 0;
    for (const inf of this.#primary) {
      for (const key of inf.store.keys()) {
        this.#add(key, cause, LOW_PRIORITY);
        n++;
      }
    }
    return n;
  }

  /**
   * Waits until no reconcile of a primary matching `matches` is in flight, e.g. of a share of
   * the objects that just left this replica's cache (no new reconcile of those starts), and
   * ends their timers and daemons (the signal's reason says the shard left) — the drain before
   * a shard changes hands.
   *
   * @param matches Which primaries to wait for.
   * @returns A promise that resolves once none is being reconciled and their daemons ended.
   */
  async idle(matches: (obj: KubeObject) => boolean): Promise<void> {
    // Their timers and daemons end too: the objects are another replica's now.
    const left = this.#background.leave(
      matches,
      `Controller "${this.controller.name}" stopped: the object's shard left this replica`,
    );
    const busy = () => [...this.#inFlight.values()].some(matches);
    if (busy()) await new Promise<void>((resolve) => this.#idleWaiters.add({ busy, resolve }));
    await left;
  }

  /**
   * The informers of one cached kind, one per watched namespace, from the factory; `holds`
   * collects them as releasable holds instead (a watch added at run time).
   */
  #scoped(kind: CachedKind, holds?: InformerHold<any>[]): CachedSource {
    const factory = this.#factory;
    const res = kind.resource;
    const namespaces = res.namespaced ? kind.namespaces ?? this.#namespaces : undefined;
    const prefix = `${this.controller.name}/`;
    const shard = this.#shard;
    const sharded = shard && isSharded(kind, shard);
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
    const get = (q: typeof query & { namespace?: string }) => {
      if (!holds) return factory.for(res, q);
      const hold = factory.acquire(res, q);
      holds.push(hold);
      return hold.informer;
    };
    const informers = namespaces
      ? namespaces.map((namespace) => get({ ...query, namespace }))
      : [get(query)];
    for (const inf of informers) if (!this.#all.includes(inf)) this.#all.push(inf);
    return {
      resource: res,
      informers,
      ...(namespaces ? { namespaces } : {}),
      indexes: Object.fromEntries(Object.keys(kind.indexes).map((name) => [name, prefix + name])),
    };
  }

  /**
   * Turns the events of one cached kind into keys: on each of its informers, a handler per
   * role it has here (primary, each `owns` and `watches` entry of it; a kind only read gets
   * one that just confirms the controller's writes). Returns what removes them all.
   */
  #wire(kind: CachedKind, watches = this.controller.watches): Unsubscribe {
    const c = this.controller;
    const key = kindKey(kind.resource);
    const track = trackKey(kind.resource);
    const handlers: ((ev: ObjectEvent<KubeObject>, info: InformerEventInfo) => void)[] = [];
    if (kind.roles.includes("primary")) {
      handlers.push((ev, info) => this.#onPrimary(track, ev as ObjectEvent<T>, info));
    }
    for (const owned of c.owns) {
      if (kindKey(owned) === key) {
        handlers.push((ev, info) => this.#onOwned(owned, track, ev, info));
      }
    }
    // Read kinds queue nothing, but their events confirm the writes this controller made.
    if (kind.roles.every((r) => r === "reads")) {
      handlers.push((ev) => void this.#writes.observe(track, ev));
    }
    for (const w of watches) {
      if (kindKey(w.resource) === key) {
        handlers.push((ev, info) => this.#onWatched(w, track, ev, info));
      }
    }
    const removers = this.#sources.get(key)!.informers.flatMap((inf: Informer<KubeObject>) =>
      handlers.map((h) => inf.onEvent(h))
    );
    return () => {
      for (const remove of removers) remove();
    };
  }

  /**
   * Keys from an informer's first list and from resyncs wait behind real changes, as with
   * controller-runtime's priority queue (`handler.WithLowPriorityWhenUnchanged`).
   */
  #priority(ev: ObjectEvent<KubeObject>, info: InformerEventInfo): number {
    const unchanged = info.initialList || (ev.type === "modified" && ev.old === ev.object);
    return unchanged ? LOW_PRIORITY : DEFAULT_PRIORITY;
  }

  #onPrimary(kind: string, ev: ObjectEvent<T>, info: InformerEventInfo): void {
    const key = enqueueSelf(ev);
    const echoes = this.#writes.observe(kind, ev);
    if (ev.type === "deleted") this.#background.gone(key);
    else this.#background.seen(key, ev.object);
    if (ev.type === "deleted") {
      this.#memory.forgetStatus(key);
      this.#writes.forget(key);
      this.#writes.undefer(key);
    }
    if (echoes.has(key) || passes(this.controller.predicates, ev)) {
      this.#writes.queue(key, echoes, "primary", kind, ev, this.#priority(ev, info));
    }
  }

  #onOwned(
    owned: Resource<any>,
    kind: string,
    ev: ObjectEvent<KubeObject>,
    info: InformerEventInfo,
  ): void {
    const echoes = this.#writes.observe(kind, ev);
    if (ev.type === "deleted") this.#memory.forgetApplied(appliedKey(owned, ev.object));
    const keys = enqueueOwners(this.controller.resource, ev);
    this.#writes.enqueue(keys, echoes, "owns", kind, ev, this.#priority(ev, info));
  }

  #onWatched(
    w: WatchSpec,
    kind: string,
    ev: ObjectEvent<KubeObject>,
    info: InformerEventInfo,
  ): void {
    const echoes = this.#writes.observe(kind, ev);
    const keys = enqueueMapped(w, this.#reader, ev);
    this.#writes.enqueue(keys, echoes, "watches", kind, ev, this.#priority(ev, info));
  }

  #add(key: string, cause: QueueCause, priority?: number): void {
    this.#metrics?.queued?.(this.controller.name, cause);
    // A real change may parent the reconcile; a list, resync or requeue only links to it.
    if (tracing()) {
      this.#triggers.add(key, activeLink(), (priority ?? DEFAULT_PRIORITY) > LOW_PRIORITY);
    }
    this.queue.add(key, priority === undefined ? undefined : { priority });
  }

  #get(key: string): T | undefined {
    if (this.#primary.length === 1) return this.#primary[0].get(key);
    const ns = parseObjectKey(key).namespace ?? "";
    const i = this.#primaryNamespaces!.indexOf(ns);
    return i < 0 ? undefined : this.#primary[i].get(key);
  }

  async #work(changesOnly: boolean): Promise<void> {
    const options = changesOnly ? { minPriority: DEFAULT_PRIORITY } : undefined;
    for (;;) {
      const item = await this.queue.get(options);
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

  /** Reconciles `key`: reads it from the cache, builds its context, runs it, acts on the end. */
  async #process(key: string): Promise<void> {
    // A timer call running for this key ends first: the two never overlap.
    const timer = this.#background.hold(key);
    if (timer) await timer;
    const cached = this.#get(key);
    if (!cached) {
      this.queue.forget(key);
      this.#writes.forget(key);
      this.#triggers.take(key);
      return;
    }
    if (!this.#writes.caughtUp(key)) return;
    // One span per reconcile: a child of the first real change that queued it (its trace),
    // linked to every other trigger the work queue merged into it (later events, a list or
    // resync, the requeue of the reconcile before); its API calls, finalizer and logs are
    // inside it.
    const triggers = this.#triggers.take(key);
    const reconcileID = crypto.randomUUID();
    await inSpan("reconcile", () => ({
      "kubeno.controller": this.controller.name,
      "kubeno.key": key,
      "kubeno.reconcile_id": reconcileID,
      "k8s.kind": this.controller.resource.kind,
      "k8s.namespace.name": cached.metadata.namespace,
      "k8s.object.name": cached.metadata.name,
      "kubeno.reconcile.triggers": triggers.count,
    }), async (span) => {
      const { result, settled } = await this.#reconcileOnce(key, cached, reconcileID);
      span.set({
        "kubeno.reconcile.result": result,
        "kubeno.reconcile.requeue_after_ms": settled.ok
          ? settled.result?.requeueAfterMs
          : undefined,
      });
      if (!settled.ok) span.error(settled.error);
      // A requeue or retry is what queues the next reconcile: it links back to this one.
      if (result !== "success" && result !== "terminal") {
        this.#triggers.add(key, span.link(), false);
      }
    }, { parent: triggers.parent, links: triggers.links, root: true });
  }

  /** One attempt at `key`: its context, the bounded run, the outcome switch. */
  async #reconcileOnce(
    key: string,
    cached: T,
    reconcileID: string,
  ): Promise<{ result: ReconcileOutcome; settled: Settled }> {
    // In flight from the moment it was read from the cache, with no await in between: a
    // share leaving the cache either takes this object out first or waits for it.
    this.#inFlight.set(key, cached);
    // The reconcile's own copy: it may change it; the frozen cached object stays as the
    // server's state that "nothing changed" is judged against.
    const obj = dataCopy(cached);
    // Bounded by `timeoutMs`: past it the attempt's signal aborts, its context refuses to
    // write, and this worker stops waiting for it (it settles as a TimeoutError, retried
    // after the key's backoff); however the abandoned call ends later is ignored.
    const attempt = boundedAttempt({
      key,
      timeoutMs: this.controller.timeoutMs,
      clock: this.#clock,
      signal: this.#abort.signal,
    });
    const { handle, log } = this.#context(key, obj, cached, attempt.signal, reconcileID);
    const started = performance.now();
    const settled = await attempt.run(() => this.#run(obj, handle));
    if (attempt.timedOut) this.#metrics?.timeout?.(this.controller.name);
    const result = settle(key, settled, started, {
      controller: this.controller.name,
      queue: this.queue,
      metrics: this.#metrics,
      log,
      warn: (reason, message) => this.#events.warning(obj, reason, message),
    });
    this.#syncWatches();
    return { result, settled };
  }

  /**
   * Adds the watches `watchesFrom` wants now and drops those it no longer returns. A kind the
   * controller caches otherwise is left alone; one whose watch cannot start is logged and
   * tried again after the next reconcile.
   */
  #syncWatches(): void {
    const from = this.controller.watchesFrom;
    if (!from || this.#stopping) return;
    let wanted: readonly WatchSpec[];
    try {
      wanted = from(this.#reader);
    } catch (err) {
      this.#log.error("Controller {controller} cannot choose its watches: {error}", {
        controller: this.controller.name,
        error: err instanceof Error ? err.message : String(err),
      });
      return;
    }
    const keys = new Map(wanted.map((w) => [kindKey(w.resource), w]));
    for (const [key, spec] of keys) {
      if (this.#dynamic.has(key) || this.#sources.has(key)) continue;
      const added = this.addWatch(spec).catch((err) => {
        this.#log.error("Controller {controller} cannot watch {kind}: {error}", {
          controller: this.controller.name,
          kind: `${spec.resource.kind} (${spec.resource.apiVersion})`,
          error: err instanceof Error ? err.message : String(err),
        });
        this.#dynamic.delete(key);
        return undefined;
      });
      this.#dynamic.set(key, added);
    }
    for (const [key, added] of this.#dynamic) {
      if (keys.has(key)) continue;
      this.#dynamic.delete(key);
      void added.then((w) => w?.remove());
    }
  }

  /** The context of one reconcile of `key`, and its logger. */
  #context(
    key: string,
    obj: T,
    cached: T,
    signal: AbortSignal,
    reconcileID: string,
  ): { handle: ContextHandle<T>; log: Logger } {
    const c = this.controller;
    // controller-runtime's reconcile log fields, so log queries carry over.
    const log = this.#log.with({
      ...(this.#cluster ? { cluster: this.#cluster.name } : {}),
      controller: c.name,
      namespace: obj.metadata.namespace ?? "",
      name: obj.metadata.name,
      reconcileID,
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
      cluster: this.#cluster,
      signal,
      memory: this.#memory,
      tracking: this.#writes.tracking(key),
      owned: (kind, name, namespace) => {
        if (!this.#owned.has(kindKey(kind))) return undefined;
        const ns = kind.namespaced ? namespace : undefined;
        let cached: KubeObject | undefined;
        try {
          cached = this.#reader.get(kind, name, { namespace: ns });
        } catch {
          // Not in a namespace this controller caches: nothing to compare with.
        }
        return { key: appliedKey(kind, { metadata: { name, namespace: ns } }), cached };
      },
    });
    return { handle, log };
  }

  /** Calls the user's reconcile, through the finalizer when the controller has one. */
  async #run(obj: T, handle: ContextHandle<T>): Promise<ReconcileResult> {
    const c = this.controller;
    const ctx = handle.ctx;
    if (!c.finalizer) return await c.reconcile(obj, ctx);
    // The finalizer writes go through the context: computed from and guarded by the
    // newest state it knows (the reconcile's own status writes included).
    return await finalizer(
      this.#client,
      c.resource,
      c.finalizer,
      obj,
      (ev) =>
        ev.type === "cleanup"
          ? c.finalize!(ev.object, ctx)
          // After the add: the server's answer, which is also the context's own state.
          : c.reconcile(ev.object === obj ? obj : dataCopy(ev.object), ctx),
      { write: (patch) => handle.patchPrimary(patch) },
    );
  }
}
