/**
 * `InformerFactory`: one informer per kind and query, shared by every controller that asks,
 * as client-go's `SharedInformerFactory` and controller-runtime's cache.
 *
 * @module
 */
import type { Client } from "../../client/client.ts";
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import { isMetadataOnly } from "../../core/metadata_only.ts";
import type { IndexFunc } from "./store.ts";
import type { WatchClient, WatchQuery } from "../watch/watch.ts";
import { Informer, type InformerOptions } from "./informer.ts";
import type { ShardFilter } from "./shard_filter.ts";

/** Options for {@linkcode InformerFactory}: what every informer it makes shares. */
export type InformerFactoryOptions = Omit<
  InformerOptions<any>,
  "namespace" | "labelSelector" | "fieldSelector" | "shardSelector" | "indexes" | "shard"
>;

/** A hold on a shared informer, from {@linkcode InformerFactory.prototype.acquire}. */
export interface InformerHold<T extends KubeObject> {
  /** The informer. */
  readonly informer: Informer<T>;
  /**
   * Gives the hold back; the last one removes the informer (unless `for()` handed it out).
   * Calling it again does nothing.
   *
   * @returns A promise that resolves once the informer, if removed, is stopped.
   */
  release(): Promise<void>;
}

/** The query of {@linkcode InformerFactory.prototype.for}, plus indexes to ensure. */
export interface InformerQuery<T> extends WatchQuery {
  /**
   * Indexes the informer's store must have; ones already present by name are kept.
   * @default {}
   */
  indexes?: Record<string, IndexFunc<T>>;
  /**
   * A transform for this informer instead of the factory's; informers with different
   * transforms are not shared (the same function is).
   * @default the factory's `transform`
   */
  transform?: (obj: T) => T;
  /**
   * Cache only this replica's share of the kind; informers with different filters are not
   * shared (the same filter is).
   * @default every object the query selects
   */
  shard?: ShardFilter;
}

const transformIds = new WeakMap<object, number>();
let nextTransformId = 1;

function transformId(fn: object | undefined): string {
  if (!fn) return "";
  let id = transformIds.get(fn);
  if (id === undefined) transformIds.set(fn, id = nextTransformId++);
  return String(id);
}

/**
 * Hands out one shared {@linkcode Informer} per kind + namespace + label selector + field
 * selector (+ transform, shard filter, and full or metadata-only), so two controllers watching the same
 * query use one watch and one cache.
 *
 * Informers are started by {@linkcode InformerFactory.prototype.start}; those asked for
 * after it are started at once. `acquire()` holds one for a while and its last `release()`
 * stops it; `remove()` stops one for good. Disposing the factory stops them all and closes
 * the client it created.
 *
 * @example Two controllers, one watch
 * ```ts
 * import { InformerFactory } from "./informer_factory.ts";
 * import { resource } from "../../core/resource.ts";
 * const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
 * const client = {
 *   list: () => Promise.resolve({ metadata: { resourceVersion: "1" }, items: [] }),
 *   watchEvents: () => (async function* () {})(),
 * };
 * await using informers = new InformerFactory({ client });
 * const a = informers.for(ConfigMap, { namespace: "default" });
 * const b = informers.for(ConfigMap, { namespace: "default" });
 * if (a !== b || informers.size !== 1 || [...informers.all()][0] !== a) throw new Error();
 * informers.start();
 * await informers.synced();
 * ```
 */
export class InformerFactory implements AsyncDisposable {
  readonly #opts: InformerFactoryOptions;
  readonly #informers = new Map<string, Informer<any>>();
  readonly #holds = new Map<Informer<any>, number>();
  readonly #pinned = new WeakSet<Informer<any>>();
  #client: Promise<WatchClient> | undefined;
  #ownClient: Promise<Client> | undefined;
  #started = false;
  #stopped = false;

  /**
   * Creates an empty factory.
   *
   * @param options Client, transform, resync and watch options shared by every informer.
   */
  constructor(options: InformerFactoryOptions = {}) {
    this.#opts = options;
  }

  /**
   * The number of distinct informers handed out.
   *
   * @returns The count.
   */
  get size(): number {
    return this.#informers.size;
  }

  /**
   * Every informer handed out so far, including those asked for after `start()`; read it
   * at each use (e.g. each health probe) to see informers created later.
   *
   * @returns The informers, in the order they were created.
   */
  all(): IterableIterator<Informer<any>> {
    return this.#informers.values();
  }

  /**
   * The shared informer for a kind and query, created on first request.
   *
   * @typeParam T The object type of the resource.
   * @param resource The kind.
   * @param query Namespace, selectors, and indexes to ensure.
   * @returns The informer; started if the factory is.
   * @throws {TypeError} When the factory was stopped.
   */
  for<T extends KubeObject>(resource: Resource<T>, query: InformerQuery<T> = {}): Informer<T> {
    const inf = this.#get(resource, query);
    this.#pinned.add(inf);
    return inf;
  }

  /**
   * Holds the shared informer for a kind and query until released: the last release of an
   * informer no one asked for with `for()` removes it (see `remove`). For kinds needed only
   * for a while — a watch a controller adds at run time, a CRD that may go away.
   *
   * @typeParam T The object type of the resource.
   * @param resource The kind.
   * @param query Namespace, selectors, and indexes to ensure.
   * @returns The hold: its informer (started if the factory is) and `release()`.
   * @throws {TypeError} When the factory was stopped.
   *
   * @example Watching Secrets for a while
   * ```ts
   * import { InformerFactory } from "./informer_factory.ts";
   * import { resource } from "../../core/resource.ts";
   * const Secret = resource({ group: "", version: "v1", kind: "Secret" });
   * const client = {
   *   list: () => Promise.resolve({ metadata: { resourceVersion: "1" }, items: [] }),
   *   watchEvents: () => (async function* () {})(),
   * };
   * await using informers = new InformerFactory({ client }).start();
   * const hold = informers.acquire(Secret, { namespace: "default" });
   * await hold.informer.synced();
   * await hold.release();
   * if (informers.size !== 0) throw new Error("the informer is still there");
   * ```
   */
  acquire<T extends KubeObject>(
    resource: Resource<T>,
    query: InformerQuery<T> = {},
  ): InformerHold<T> {
    const inf = this.#get(resource, query);
    this.#holds.set(inf, (this.#holds.get(inf) ?? 0) + 1);
    let released: Promise<void> | undefined;
    return {
      informer: inf,
      release: () =>
        released ??= (async () => {
          const left = (this.#holds.get(inf) ?? 1) - 1;
          if (left > 0) return void this.#holds.set(inf, left);
          this.#holds.delete(inf);
          if (!this.#pinned.has(inf)) await this.remove(inf);
        })(),
    };
  }

  /**
   * Stops an informer for good and forgets it: its watch closes, its handlers are told
   * (`onStopped`) and called no more, and its store is emptied so the objects can be
   * collected. A later `for()` or `acquire()` of the same query makes a new informer.
   *
   * @param informer An informer this factory handed out.
   * @returns A promise that resolves once its watch is closed.
   */
  async remove(informer: Informer<any>): Promise<void> {
    for (const [key, inf] of this.#informers) {
      if (inf === informer) this.#informers.delete(key);
    }
    this.#holds.delete(informer);
    this.#pinned.delete(informer);
    await informer.stop();
    informer.store.replace([]);
  }

  #get<T extends KubeObject>(resource: Resource<T>, query: InformerQuery<T>): Informer<T> {
    if (this.#stopped) throw new TypeError("Cannot get an informer: the factory was stopped");
    const key = [
      resource.group,
      resource.version,
      resource.plural,
      query.namespace ?? "",
      query.labelSelector ?? "",
      query.fieldSelector ?? "",
      query.shardSelector ?? "",
      isMetadataOnly(resource) ? "metadata" : "",
      transformId(query.transform),
      transformId(query.shard),
    ].join("\u0000");
    let inf = this.#informers.get(key) as Informer<T> | undefined;
    if (!inf) {
      inf = new Informer<T>(resource, {
        ...this.#opts,
        client: this.#sharedClient(),
        namespace: query.namespace,
        labelSelector: query.labelSelector,
        fieldSelector: query.fieldSelector,
        shardSelector: query.shardSelector,
        ...(query.transform ? { transform: query.transform } : {}),
        ...(query.shard ? { shard: query.shard } : {}),
      });
      this.#informers.set(key, inf);
      if (this.#started) inf.start();
    }
    for (const [name, fn] of Object.entries(query.indexes ?? {})) {
      if (!inf.store.hasIndex(name)) inf.store.addIndex(name, fn);
    }
    return inf;
  }

  /**
   * Starts every informer handed out, and every later one as it is handed out.
   *
   * @returns This factory.
   * @throws {TypeError} When the factory was stopped.
   */
  start(): this {
    if (this.#stopped) throw new TypeError("Cannot start the informer factory: it was stopped");
    this.#started = true;
    for (const inf of this.#informers.values()) inf.start();
    return this;
  }

  /**
   * Waits until every informer handed out so far has synced.
   *
   * @param options `signal` cancels the wait.
   * @returns A promise that resolves once all have synced.
   * @throws {WatchError} The first persistent failure of an informer before it synced.
   */
  async synced(options: { signal?: AbortSignal } = {}): Promise<void> {
    await Promise.all([...this.#informers.values()].map((inf) => inf.synced(options)));
  }

  /**
   * Stops every informer and closes the client the factory created, if any.
   *
   * @returns A promise that resolves once every watch is closed.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all([...this.#informers.values()].map((inf) => inf.stop()));
    const own = await this.#ownClient?.catch(() => undefined);
    own?.close();
  }

  /**
   * Same as {@linkcode InformerFactory.prototype.stop}, for `await using`.
   *
   * @returns A promise that resolves once stopped.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  #sharedClient(): Promise<WatchClient> {
    if (this.#client) return this.#client;
    if (this.#opts.client) return this.#client = Promise.resolve(this.#opts.client);
    this.#ownClient = import("../../client/client.ts").then((m) => m.createClient());
    // A failure is reported by each informer; keep it from being unhandled here.
    this.#ownClient.catch(() => {});
    return this.#client = this.#ownClient;
  }
}
