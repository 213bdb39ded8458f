/**
 * `ControllerRuntime`: runs one {@linkcode Controller} (made by `reconcile()`) as a pipeline
 * of four stages over shared informers. A manager creates one per controller; use it
 * directly only to run a controller without a manager.
 *
 * ## Flow
 *
 * Four stages, each in its own file with a typed hand-off (ARCHITECTURE.md has the table):
 * the sources (`sources.ts`) turn informer events and external sources into keys with a cause
 * and a priority; the write gate (`write_gate.ts`) drops the echoes of the controller's own
 * writes and says when a key may run; the work queue (`../../queue/workqueue.ts`) orders,
 * de-duplicates and rate-limits; the workers (`worker.ts`) make one attempt per key and settle
 * its outcome. This class only assembles the stages and starts and stops them: `start()` waits
 * until the controller's caches have synced, then runs the workers, the timers and daemons of
 * every cached primary (`../../source/background.ts`) and the external sources; `stop()` stops
 * the sources, waits for in-flight reconciles up to a deadline, and lets the queue drain.
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
import { getLogger, type Logger } from "../../../util/log.ts";
import { type Clock, realClock } from "../../../util/clock.ts";
import { firstLine } from "../../../util/cli_io.ts";
import type { KubeObject } from "../../../core/object.ts";
import type { Resource } from "../../../core/resource.ts";
import type { Informer } from "../../cache/informer.ts";
import type { InformerReader } from "../../cache/reader.ts";
import type { WorkQueue } from "../../queue/workqueue.ts";
import type { Cause } from "../metrics_hooks.ts";
import type { Controller, WatchSpec } from "../reconcile.ts";
import { assemble, type ControllerRuntimeOptions, type Stages } from "./assemble.ts";
import { ControllerError } from "../controller_error.ts";

const RESYNC_RETRY_MS = 1_000;

/**
 * Runs one controller. See the module docs for the flow and guarantees.
 *
 * @typeParam T The primary object type.
 *
 * @example Running a controller without a manager
 * ```ts ignore — needs a live API server
 * import { ControllerRuntime } from "./runner.ts";
 * import { reconcile } from "../reconcile.ts";
 * import { InformerFactory } from "../../cache/informer_factory.ts";
 * import { createClient } from "../../../client/client.ts";
 * import { ConfigMap } from "../../../core/kinds.ts";
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
  readonly #stages: Stages<T>;
  readonly #abort = new AbortController();
  readonly #stopStart = new AbortController();
  readonly #log: Logger;
  readonly #clock: Clock;
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
    this.#log = getLogger(["kubeno", "controller", controller.name]);
    this.#clock = options.clock ?? realClock;
    this.#stages = assemble(controller, options, this.#log, this.#clock, this.#abort.signal);
    this.queue = this.#stages.queue;
  }

  /**
   * The optional kinds this runtime leaves out until served (with `deferOptional`).
   *
   * @returns Their resources.
   */
  get optionalKinds(): readonly Resource<any>[] {
    return this.#stages.sources.optionalKinds;
  }

  /**
   * The optional kinds not cached now, because the API server does not serve them.
   *
   * @returns Their resources.
   */
  get missingKinds(): readonly Resource<any>[] {
    return this.#stages.sources.missingKinds;
  }

  /**
   * Starts or stops caching an optional kind as the API server starts or stops serving it.
   * Served: its informers are held from the factory and wired as declared (`owns`,
   * `watches`, `reads`); their first list queues what it maps to, as at start, and every
   * primary once synced. Not served: its handlers are removed, reads of it answer nothing,
   * and its informers are released (stopped when no one else holds them). Kinds that are not
   * optional, and a state it is already in, are ignored.
   *
   * @param res An optional kind of this controller.
   * @param served Whether the API server serves it now.
   * @returns A promise that resolves once its informers are held or released.
   */
  served(res: Resource<any>, served: boolean): Promise<void> {
    return this.#stages.sources.served(res, served);
  }

  /**
   * Reads the controller's cache, as `ctx.cache` does (without a default namespace).
   *
   * @returns The reader.
   */
  get cache(): InformerReader {
    return this.#stages.informers.reader;
  }

  /**
   * The informers this controller reads, for health and readiness.
   *
   * @returns The distinct informers (shared with other controllers).
   */
  get informers(): readonly Informer<any>[] {
    return this.#stages.informers.all;
  }

  /**
   * Whether every informer of this controller has synced.
   *
   * @returns `true` once all have.
   */
  get synced(): boolean {
    return this.#stages.informers.all.every((inf) => inf.hasSynced);
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
   * persistently, e.g. a missing CRD or permission), then starts the workers, the timers and
   * daemons, and the external sources. The informers must be started (e.g. by
   * `InformerFactory.start()`).
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
        await Promise.all(this.#stages.informers.all.map((inf) => inf.synced({ signal: wait })));
        break;
      } catch (err) {
        if (wait.aborted) throw wait.reason;
        this.#log.error("Controller {controller} cannot sync its caches yet: {error}", {
          controller: this.controller.name,
          error: firstLine(err),
        });
        await this.#clock.sleep(RESYNC_RETRY_MS, wait).catch(() => {});
        if (wait.aborted) throw wait.reason;
      }
    }
    if (this.#stopping) {
      throw new ControllerError(`Cannot start controller "${this.controller.name}": stopped`);
    }
    this.#started = true;
    const { maxConcurrent, reservedWorkers = 0 } = this.controller;
    this.#log.info("Controller {controller} started with {workers} workers", {
      controller: this.controller.name,
      workers: maxConcurrent,
      reservedWorkers,
    });
    this.#stages.workers.start();
    this.#stages.background.start(this.#stages.informers.primaryKeys());
    this.#stages.sources.start();
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
    const name = this.controller.name;
    const background = this.#stages.background.stop(
      timeoutMs,
      `Controller "${name}" stopped: ${why}`,
    );
    this.#stopStart.abort(new ControllerError(`Controller "${name}" was stopped`));
    this.#stages.sources.stop();
    this.#stages.gate.stop();
    const timeout = new AbortController();
    const timedOut = this.#clock.sleep(timeoutMs, timeout.signal).then(() => false, () => false);
    const workers = this.#stages.workers.stop();
    const drained = Promise.all([this.queue.shutDownWithDrain(), workers]).then(() => true);
    const ok = await Promise.race([drained, timedOut]) && await background;
    timeout.abort();
    if (!ok) {
      this.#log.warn(
        "Controller {controller} gave up waiting for {active} reconciles after {timeoutMs} ms",
        { controller: name, active: this.#stages.workers.active, timeoutMs },
      );
      this.#abort.abort(new ControllerError(`Controller "${name}" shutdown timed out`));
    }
    await Promise.race([this.#stages.events.flush(), this.#clock.sleep(0)]);
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
  addWatch<U extends KubeObject>(
    spec: WatchSpec<U>,
    options: { signal?: AbortSignal } = {},
  ): Promise<{ remove(): Promise<void> }> {
    return this.#stages.sources.addWatch(spec, options);
  }

  /**
   * Queues a primary's key from outside the informers (an external source: a webhook, a
   * message queue, another controller), as kube-rs's `reconcile_on` and controller-runtime's
   * `source.Channel`. Keys are deduplicated by the work queue: a key queued again before a
   * worker took it is reconciled once. A key whose object is not in the cache is dropped
   * when a worker takes it.
   *
   * @param key The primary's key, `namespace/name` (`name` for a cluster-scoped kind).
   * @param cause Counted as the queue-add cause in metrics.
   * @default cause "source"
   */
  enqueue(key: string, cause: Cause = "source"): void {
    this.#stages.sources.enqueue(key, cause);
  }

  /**
   * Queues every cached primary, as kube-rs's `reconcile_all_on`: after a change outside the
   * cluster that every object depends on (a rotated credential, a new config file). The keys
   * wait behind real changes, as an informer's resync does.
   *
   * @param cause Counted as the queue-add cause in metrics.
   * @returns How many keys were queued.
   * @default cause "source"
   */
  reconcileAll(cause: Cause = "source"): number {
    return this.#stages.sources.reconcileAll(cause);
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
    const left = this.#stages.background.leave(
      matches,
      `Controller "${this.controller.name}" stopped: the object's shard left this replica`,
    );
    await this.#stages.workers.idle(matches);
    await left;
  }
}
