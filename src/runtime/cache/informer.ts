/**
 * `informer()`: a {@linkcode Store} kept up to date by a {@linkcode watch} stream, with
 * handlers for every change, as client-go's shared informer and kube-rs's reflector.
 *
 * ## Flow
 *
 * `start()` runs `watch()` with `retryPersistent`; each event is transformed (by default
 * `metadata.managedFields` is stripped), applied to the store, and then handed to the
 * handlers as the same {@linkcode ObjectEvent} (a `modified` event carries `old`). A
 * `relisted` event replaces the store and turns into `deleted` for what vanished, `added`
 * for what is new and `modified` for what changed.
 *
 * With a `shard` filter, the lists and watches carry its `shardSelector` and every object
 * received must also pass `shard.matches` (so a server that ignores the selector costs
 * bandwidth, not a foreign object in the store); `shard.unfiltered` hears of a list without
 * `shardInfo` and of the first object outside the share. When the filter changes, objects it no
 * longer matches leave the store without a `deleted` event (they were not deleted), and the
 * informer lists and watches again with the new selector: what the new share adds comes as
 * `added`, what it keeps produces no event.
 *
 * ## Guarantees
 *
 * - Handlers see every change exactly once, in order, after the store reflects it: within
 *   a handler, `informer.get(...)` already returns the new state.
 * - Deletions that happened while the watch was down are reported when the relist finds
 *   them missing; the object passed is the last state the informer knew.
 * - A handler added late first gets an `added` event for every object already held.
 * - `synced()` resolves once the first complete list has been applied.
 * - Failures are retried forever (with backoff, see `watch()`); the current one is in
 *   `error`, handed to `onError` once per change of state, and cleared on recovery.
 * - Objects are deeply frozen (after the transform) before they are stored: every reader
 *   and handler shares them, and none can change the cache. Writing to one throws a
 *   `TypeError`; `structuredClone(obj)` gives a mutable copy.
 *
 * ## Caveats
 *
 * Handlers run synchronously in event order: keep them quick (enqueue a key in a work
 * queue). A handler's exception or rejected promise is logged and does not stop the
 * informer.
 *
 * @module
 */
import { getLogger } from "../../util/log.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import { objectKey, type ObjectName } from "../../core/object_key.ts";
import { type IndexFunc, Store, type StoreListOptions } from "./store.ts";
import {
  type BackoffOptions,
  type ObjectEvent,
  watch,
  type WatchClient,
  type WatchEvent,
  type WatchQuery,
  type WatchStats,
  type WatchStream,
} from "../watch/watch.ts";
import type { WatchError } from "../watch/watch_error.ts";
import { describeQuery } from "../watch/watch_error.ts";
import { deepFreeze } from "../../util/freeze.ts";
import { inSpan, type SpanAttributes, tracing } from "../../util/trace.ts";
import type { ShardFilter } from "./shard_filter.ts";

const log = getLogger(["kubeno", "informer"]);

/** Where an event handed to {@linkcode InformerHandlers.onEvent} came from. */
export interface InformerEventInfo {
  /**
   * The event comes from the informer's first list (or the first list after its shard
   * changed): the object did not necessarily change, it was only first seen. A controller
   * queues such keys at low priority, as client-go's `isInInitialList`.
   */
  readonly initialList: boolean;
}

const LIVE: InformerEventInfo = Object.freeze({ initialList: false });
const INITIAL: InformerEventInfo = Object.freeze({ initialList: true });

/** Callbacks for changes seen by an {@linkcode Informer}; all optional. */
export interface InformerHandlers<T> {
  /**
   * An object appeared, changed or was deleted (deletions a relist revealed included). A
   * `modified` event always carries `old`; on a periodic resync `old === object`.
   */
  onEvent?(event: ObjectEvent<T>, info: InformerEventInfo): void | Promise<void>;
  /** The informer entered a failing state (once per change of state, not per retry). */
  onError?(error: WatchError): void | Promise<void>;
  /**
   * The informer stopped for good (its watch closed): no event follows. Called once, when
   * `stop()` completes, e.g. after `InformerFactory.remove()` for a kind no longer needed.
   */
  onStopped?(): void;
}

/** Options for {@linkcode informer}. */
export interface InformerOptions<T> extends WatchQuery {
  /**
   * The client to list and watch with, or a promise of one.
   * @default a client from the default kubeconfig
   */
  client?: WatchClient | Promise<WatchClient>;
  /**
   * Applied to every object before it is stored (and frozen); may mutate and return its
   * argument. `null` stores objects as received.
   * @default stripManagedFields
   */
  transform?: ((obj: T) => T) | null;
  /**
   * User indexes of the store.
   * @default {}
   */
  indexes?: Record<string, IndexFunc<T>>;
  /**
   * Hand every object to `onEvent` as `modified` with `old === object` this often; `0` never does.
   * @default 0
   */
  resyncMs?: number;
  /**
   * How to sync (see `watch()`): paged lists, or one streaming watch-list request that
   * falls back to paged lists when the server refuses it.
   * @default "list"
   */
  initialSync?: "watchList" | "list";
  /**
   * Objects per list page, when listing in pages.
   * @default 2000
   */
  pageSize?: number;
  /**
   * Restart a watch silent for this long (see `watch()`).
   * @default 300_000
   */
  stallTimeoutMs?: number;
  /**
   * Server-side timeout of each watch request in seconds.
   * @default random between 300 and 600
   */
  timeoutSeconds?: number;
  /**
   * Retry delays (see `watch()`).
   * @default 800 ms doubling to 30 s, with jitter
   */
  backoff?: BackoffOptions;
  /**
   * Time source for backoff, the watchdog and resync.
   * @default realClock
   */
  clock?: Clock;
  /**
   * Cache only this replica's share of the kind (see {@linkcode ShardFilter}); followed as
   * it changes.
   * @default every object the query selects
   */
  shard?: ShardFilter;
}

/** What {@linkcode Informer.prototype.health} reports, e.g. for a `/healthz` probe. */
export interface InformerHealth {
  /** Started, not stopped, synced, and not failing now. */
  healthy: boolean;
  /** The first full list has been applied. */
  synced: boolean;
  /** What the underlying watch is doing. */
  state: WatchStats["state"];
  /** Clock time of the last list, event or bookmark; a bookmark arrives about every minute. */
  lastEventAt: number | undefined;
  /** The current failure, if any. */
  error: WatchError | undefined;
}

/**
 * Strips `metadata.managedFields`, which server-side apply fills with bookkeeping that
 * controllers never read and that often doubles an object's size. The default transform.
 *
 * @typeParam T The object type.
 * @param obj The object; changed in place.
 * @returns The same object.
 *
 * @example Stripping managed fields
 * ```ts
 * import { stripManagedFields } from "./informer.ts";
 * const obj = stripManagedFields({ metadata: { name: "a", managedFields: [{ manager: "kubectl" }] } });
 * if ("managedFields" in obj.metadata) throw new Error();
 * ```
 */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  const meta = obj.metadata;
  if (meta?.managedFields) {
    // Rebuilt rather than `delete`d: deleting a property turns the object V8 built in
    // JSON.parse into a dictionary-mode one, about 450 bytes larger per cached object
    // (1,298 against 1,746 bytes for a 1 KiB ConfigMap) and slower to read.
    const { managedFields: _, ...rest } = meta;
    obj.metadata = rest;
  }
  return obj;
}

/**
 * A cache of one kind and query, kept current by a watch, with change handlers.
 * Create it with {@linkcode informer}, or share one through `InformerFactory`.
 *
 * @typeParam T The object type of the resource.
 *
 * @example Waiting for the cache and reading from it
 * ```ts ignore — needs a live API server to list and watch
 * import { informer } from "./informer.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 *
 * await using cms = informer(ConfigMap, { namespace: "default" }).start();
 * cms.onEvent((ev) => {
 *   if (ev.type === "deleted") console.log("deleted", ev.object.metadata.name);
 * });
 * await cms.synced();
 * console.log(cms.list().length, cms.get({ name: "app-config", namespace: "default" }));
 * ```
 */
export class Informer<T extends KubeObject> implements AsyncDisposable {
  /** The kind watched. */
  readonly resource: Resource<T>;
  /** The cache; read it, do not write it. */
  readonly store: Store<T>;
  readonly #opts: InformerOptions<T>;
  readonly #transform: (obj: T) => T;
  readonly #clock: Clock;
  readonly #handlers = new Set<InformerHandlers<T>>();
  readonly #waiters = new Set<{ resolve: () => void; reject: (e: unknown) => void }>();
  readonly #ctl = new AbortController();
  readonly #shard: ShardFilter | undefined;
  #stream: WatchStream<T> | undefined;
  // Whether the current stream applied its first list: events until then are initial.
  #listed = false;
  #streamCtl: AbortController | undefined;
  #unsubscribe: (() => void) | undefined;
  readonly #unfilteredReported = new Set<string>();
  #started = false;
  #run: Promise<void> | undefined;
  #synced = false;
  #stopped = false;
  #error: WatchError | undefined;
  #resyncTimer: number | undefined;

  /**
   * Prefer {@linkcode informer}.
   *
   * @param resource The kind to cache.
   * @param options Query, client, transform, indexes, resync and watch options.
   */
  constructor(resource: Resource<T>, options: InformerOptions<T> = {}) {
    this.resource = resource;
    this.#opts = options;
    const transform = options.transform === null
      ? (o: T) => o
      : options.transform ?? stripManagedFields;
    this.#transform = (o) => deepFreeze(transform(o));
    this.#clock = options.clock ?? realClock;
    this.#shard = options.shard;
    this.store = new Store<T>({ indexes: options.indexes });
  }

  /**
   * Starts listing and watching; does nothing when already started.
   *
   * @returns This informer, for chaining.
   * @throws {TypeError} When the informer was stopped.
   */
  start(): this {
    if (this.#stopped) {
      throw new TypeError(`Cannot start informer for ${this.#what()}: it was stopped`);
    }
    if (this.#started) return this;
    this.#started = true;
    const o = this.#opts;
    this.#unsubscribe = this.#shard?.subscribe(() => this.#reshard());
    this.#startStream();
    if (o.resyncMs) this.#scheduleResync(o.resyncMs);
    return this;
  }

  /** Lists and watches the query (and the shard's current selector), or nothing. */
  #startStream(): void {
    const o = this.#opts;
    const selector = this.#shard?.selector;
    this.#stream = undefined;
    this.#listed = false;
    if (selector === null) {
      // An empty share: nothing to list or watch, and nothing to wait for.
      this.#run = Promise.resolve();
      this.#markSynced();
      return;
    }
    const ctl = new AbortController();
    this.#streamCtl = ctl;
    const stream = watch(this.resource, {
      client: o.client,
      namespace: o.namespace,
      labelSelector: o.labelSelector,
      fieldSelector: o.fieldSelector,
      shardSelector: this.#shard ? selector : o.shardSelector,
      initialSync: o.initialSync,
      pageSize: o.pageSize,
      stallTimeoutMs: o.stallTimeoutMs,
      timeoutSeconds: o.timeoutSeconds,
      backoff: o.backoff,
      clock: o.clock,
      retryPersistent: true,
      signal: AbortSignal.any([this.#ctl.signal, ctl.signal]),
    });
    this.#stream = stream;
    this.#run = this.#consume(stream);
  }

  /** The share changed: drop what left it (no event: nothing was deleted), then sync again. */
  #reshard(): void {
    if (this.#stopped || !this.#started) return;
    this.#streamCtl?.abort();
    const shard = this.#shard!;
    for (const obj of [...this.store]) {
      if (!shard.matches(obj)) this.store.delete(obj);
    }
    this.#error = undefined;
    this.#startStream();
  }

  /**
   * Stops the watch and waits for it to close, then tells each handler (`onStopped`) and
   * forgets them. Final: the informer cannot start again. No handler is called after this
   * resolves; the store keeps its objects (see `InformerFactory.remove` to release them).
   *
   * @returns A promise that resolves once the watch request is closed.
   */
  async stop(): Promise<void> {
    const first = !this.#stopped;
    if (first) {
      this.#stopped = true;
      this.#unsubscribe?.();
      this.#ctl.abort();
      if (this.#resyncTimer !== undefined) this.#clock.clearTimeout(this.#resyncTimer);
      const err = new Error(`Cannot wait for informer for ${this.#what()} to sync: it was stopped`);
      for (const w of this.#waiters) w.reject(err);
      this.#waiters.clear();
    }
    await this.#run;
    if (!first) return;
    const handlers = [...this.#handlers];
    this.#handlers.clear();
    for (const h of handlers) {
      try {
        h.onStopped?.();
      } catch (err) {
        this.#handlerFailed("onStopped", err);
      }
    }
  }

  /**
   * Same as {@linkcode Informer.prototype.stop}, for `await using`.
   *
   * @returns A promise that resolves once stopped.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /**
   * Waits until the first complete list has been applied. Does not start the informer.
   *
   * @param options `signal` cancels the wait.
   * @returns A promise that resolves once synced.
   * @throws {WatchError} When a persistent failure (403, unknown resource, ...) occurs
   * before the first list; the informer keeps retrying and a later call may succeed.
   * @throws {Error} When the informer is stopped first, or the signal's reason on abort.
   */
  synced(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.#synced) return Promise.resolve();
    if (this.#error?.persistent) return Promise.reject(this.#error);
    if (this.#stopped) {
      return Promise.reject(
        new Error(`Cannot wait for informer for ${this.#what()} to sync: it was stopped`),
      );
    }
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.#waiters.delete(w);
        reject(signal!.reason);
      };
      const done = () => signal?.removeEventListener("abort", onAbort);
      const w = {
        resolve: () => (done(), resolve()),
        reject: (e: unknown) => (done(), reject(e)),
      };
      this.#waiters.add(w);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * Whether the first complete list has been applied.
   *
   * @returns True once synced.
   */
  get hasSynced(): boolean {
    return this.#synced;
  }

  /**
   * The current failure, cleared on recovery.
   *
   * @returns The error, or `undefined` while healthy.
   */
  get error(): WatchError | undefined {
    return this.#error;
  }

  /**
   * Clock time of the last list, event or bookmark received.
   *
   * @returns Milliseconds since the epoch, or `undefined` before the first.
   */
  get lastEventAt(): number | undefined {
    return this.#stream?.stats.lastEventAt;
  }

  /**
   * The underlying watch's counters (syncs, list pages, watch requests, stalls, failures).
   *
   * @returns A snapshot of the stats.
   */
  get stats(): Readonly<WatchStats> | undefined {
    return this.#stream?.stats;
  }

  /**
   * A summary for health probes.
   *
   * @returns Whether the informer is healthy, and why not.
   */
  health(): InformerHealth {
    const stats = this.#stream?.stats;
    // An empty share runs no watch, and is healthy.
    const running = !!stats || (this.#started && this.#shard?.selector === null);
    return {
      healthy: running && !this.#stopped && this.#synced && !this.#error,
      synced: this.#synced,
      state: stats?.state ?? "idle",
      lastEventAt: stats?.lastEventAt,
      error: this.#error,
    };
  }

  /**
   * The cached object with this key or name.
   *
   * @param key `namespace/name`, `name`, or a name and namespace.
   * @returns The object, or `undefined`.
   */
  get(key: string | ObjectName): T | undefined {
    return this.store.get(key);
  }

  /**
   * The cached objects, optionally filtered.
   *
   * @param options Namespace and label selector.
   * @returns The objects.
   */
  list(options?: StoreListOptions): T[] {
    return this.store.list(options);
  }

  /**
   * Adds handlers. When the informer has synced already, `onEvent` first gets an `added`
   * event for every object held.
   *
   * @param handlers `onEvent` and/or `onError`.
   * @returns A function that removes the handlers.
   */
  addHandler(handlers: InformerHandlers<T>): () => void {
    const h = { ...handlers };
    this.#handlers.add(h);
    if (this.#synced && h.onEvent) {
      for (const object of this.store) this.#call(h, { type: "added", object }, INITIAL);
    }
    return () => this.#handlers.delete(h);
  }

  /**
   * Calls `fn` with every change: `added`, `modified` (with `old`) and `deleted`.
   *
   * @param fn The handler.
   * @returns A function that removes it.
   */
  onEvent(
    fn: (event: ObjectEvent<T>, info: InformerEventInfo) => void | Promise<void>,
  ): () => void {
    return this.addHandler({ onEvent: fn });
  }

  /**
   * Calls `fn` when the informer enters a failing state.
   *
   * @param fn The handler.
   * @returns A function that removes it.
   */
  onError(fn: (error: WatchError) => void | Promise<void>): () => void {
    return this.addHandler({ onError: fn });
  }

  async #consume(stream: WatchStream<T>): Promise<void> {
    try {
      for await (const ev of stream) {
        // A stream the shard replaced delivers nothing more.
        if (stream !== this.#stream) break;
        try {
          this.#apply(ev);
        } catch (err) {
          // A throwing transform or a nameless object must not end the informer.
          log.error("Informer for {what} cannot apply a {type} event: {error}", {
            what: this.#what(),
            type: ev.type,
            error: err instanceof Error ? err.message : String(err),
          });
        }
      }
    } catch (err) {
      // Only a failure to create the default client ends the stream despite retryPersistent.
      if (stream === this.#stream) this.#fail(err as WatchError);
    }
  }

  #apply(ev: WatchEvent<T>): void {
    if (this.#stopped) return;
    if (ev.type === "error") return this.#fail(ev.error);
    if (this.#error) {
      log.info("Informer for {what} recovered", { what: this.#what() });
      this.#error = undefined;
    }
    switch (ev.type) {
      case "relisted": {
        // A paged list the server did not filter carries no shardInfo.
        if (this.#shard && !ev.shardInfo && this.#stream?.stats.initialSync === "list") {
          this.#reportUnfiltered("no-shard-info");
        }
        // One object whose transform or index throws must not cost the others: it keeps its
        // previous version (or stays out), the rest of the list is applied, and the informer
        // syncs.
        const objects: T[] = [];
        for (const raw of ev.objects) {
          if (!this.#inShard(raw)) continue;
          try {
            objects.push(this.#transform(raw));
          } catch (error) {
            this.#rejected(raw, error);
            const held = raw.metadata?.name ? this.store.get(objectKey(raw)) : undefined;
            if (held) objects.push(held);
          }
        }
        const changes = this.store.replace(objects, ev.resourceVersion);
        const info = this.#listed ? LIVE : INITIAL;
        this.#listed = true;
        for (const r of changes.rejected) this.#rejected(r.object, r.error);
        // One span for the whole list: the keys it queues link to it, not to a span each.
        inSpan("watch list", () => this.#spanAttributes(ev.resourceVersion, objects.length), () => {
          for (const object of changes.deleted) this.#emit({ type: "deleted", object }, info);
          for (const object of changes.added) this.#emit({ type: "added", object }, info);
          for (const u of changes.updated) {
            this.#emit({ type: "modified", object: u.new, old: u.old }, info);
          }
        });
        this.#markSynced();
        break;
      }
      case "added":
      case "modified": {
        if (!this.#inShard(ev.object)) break;
        const object = this.#transform(ev.object);
        const old = this.store.upsert(object);
        this.#emitTraced(old ? { type: "modified", object, old } : { type: "added", object });
        break;
      }
      case "deleted": {
        if (!this.#inShard(ev.object)) break;
        const object = this.#transform(ev.object);
        if (this.store.delete(object)) this.#emitTraced({ type: "deleted", object });
        break;
      }
    }
  }

  #markSynced(): void {
    if (this.#synced) return;
    this.#synced = true;
    for (const w of this.#waiters) w.resolve();
    this.#waiters.clear();
  }

  /** Whether a received object belongs to the shard; one that does not means no server filter. */
  #inShard(obj: T): boolean {
    if (!this.#shard) return true;
    const kept = this.#shard.matches(obj);
    this.#shard.received?.(this.resource, kept);
    if (!kept) this.#reportUnfiltered("foreign-object");
    return kept;
  }

  #reportUnfiltered(reason: "no-shard-info" | "foreign-object"): void {
    if (this.#unfilteredReported.has(reason)) return;
    this.#unfilteredReported.add(reason);
    try {
      this.#shard?.unfiltered?.(this.resource, reason);
    } catch (err) {
      this.#handlerFailed("unfiltered", err);
    }
  }

  #rejected(obj: T, error: unknown): void {
    log.error("Informer for {what} cannot cache {name}: {error}; keeping what it held", {
      what: this.#what(),
      name: `${obj.metadata?.namespace ? `${obj.metadata.namespace}/` : ""}${
        obj.metadata?.name ?? "(no name)"
      }`,
      error: error instanceof Error ? error.message : String(error),
    });
  }

  #fail(error: WatchError): void {
    this.#error = error;
    for (const h of this.#handlers) this.#call(h, error);
    if (error.persistent && !this.#synced) {
      for (const w of this.#waiters) w.reject(error);
      this.#waiters.clear();
    }
  }

  #emit(event: ObjectEvent<T>, info = LIVE): void {
    for (const h of this.#handlers) this.#call(h, event, info);
  }

  /**
   * Emits one watch event inside its own span, the one the keys it queues link to (and the
   * parent of the reconcile they start).
   */
  #emitTraced(event: ObjectEvent<T>): void {
    if (!tracing()) return this.#emit(event);
    const meta = event.object.metadata;
    inSpan("watch event", () => ({
      ...this.#spanAttributes(meta.resourceVersion),
      "kubeno.watch.event": event.type,
      "k8s.namespace.name": meta.namespace,
      "k8s.object.name": meta.name,
      "k8s.object.uid": meta.uid,
    }), () => this.#emit(event));
  }

  #spanAttributes(resourceVersion?: string, count?: number): SpanAttributes {
    return {
      "k8s.kind": this.resource.kind,
      "k8s.api_version": this.resource.apiVersion,
      "k8s.resource_version": resourceVersion,
      "kubeno.watch.objects": count,
      "kubeno.watch.query": this.#what(),
    };
  }

  /** Calls `onEvent` with an event, or `onError` with an error; never throws. */
  #call(h: InformerHandlers<T>, arg: ObjectEvent<T> | WatchError, info = LIVE): void {
    const kind = arg instanceof Error ? "onError" : "onEvent";
    try {
      const r = arg instanceof Error ? h.onError?.(arg) : h.onEvent?.(arg, info);
      if (r instanceof Promise) r.catch((err) => this.#handlerFailed(kind, err));
    } catch (err) {
      this.#handlerFailed(kind, err);
    }
  }

  #handlerFailed(kind: string, err: unknown): void {
    log.error("Handler {kind} of informer for {what} failed: {error}", {
      kind,
      what: this.#what(),
      error: err instanceof Error ? err.message : String(err),
    });
  }

  #scheduleResync(ms: number): void {
    this.#resyncTimer = this.#clock.setTimeout(() => {
      if (this.#stopped) return;
      if (this.#synced) {
        for (const object of this.store) this.#emit({ type: "modified", object, old: object });
      }
      this.#scheduleResync(ms);
    }, ms);
  }

  #what(): string {
    return describeQuery(this.resource, this.#opts);
  }
}

/**
 * Creates an informer for one kind and query. Call `start()` to run it; stop it with
 * `stop()` or `await using`. To share informers between controllers, use
 * `InformerFactory`.
 *
 * @typeParam T The object type of the resource.
 * @param resource The kind to cache, e.g. `ConfigMap`.
 * @param options Namespace, selectors, client, transform, indexes, resync and watch options.
 * @returns A stopped informer.
 *
 * @example Caching ConfigMaps from a stand-in client
 * ```ts
 * import { informer } from "./informer.ts";
 * import { resource } from "../../core/resource.ts";
 * const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
 * const client = {
 *   list: () => Promise.resolve({ metadata: { resourceVersion: "5" }, items: [] }),
 *   watchEvents: () => (async function* () {})(),
 * };
 * await using cms = informer(ConfigMap, { client }).start();
 * await cms.synced();
 * if (cms.list().length !== 0 || !cms.hasSynced) throw new Error();
 * ```
 */
export function informer<T extends KubeObject>(
  resource: Resource<T>,
  options: InformerOptions<T> = {},
): Informer<T> {
  return new Informer(resource, options);
}
