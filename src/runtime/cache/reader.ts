/**
 * `CacheReader`: typed, read-only reads answered from informers' stores, with no request to
 * the API server — the read half of controller-runtime's delegating client. A controller's
 * `ctx.cache` and the second argument of its map functions are readers over the kinds it
 * declared (`owns`, `watches`, `reads` and its primary).
 *
 * ## Guarantees
 *
 * - No read sends a request: every answer comes from a store kept current by a watch.
 * - Objects are the cached objects themselves, deeply frozen: reading costs no copy and
 *   no reader can change the cache. `structuredClone(obj)` gives a mutable copy.
 * - Reading a kind the reader was not given fails at once with a one-line `TypeError` that
 *   says how to declare it; nothing falls back to an API call.
 *
 * ## Caveats
 *
 * The cache is as fresh as the last watch event: a write made a moment ago may not be in it
 * yet. In a reconcile, `ctx.cache` shows the controller's own writes at once (what it
 * created, changed or deleted through the context), and the next reconcile of a primary waits
 * until the cache itself shows them (see `ControllerRuntime`). Writes by anyone else appear
 * when their watch event arrives, and that event triggers another reconcile.
 *
 * @module
 */
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import { isMetadataOnly } from "../../core/metadata_only.ts";
import { kindKey } from "../../core/kind_key.ts";
import { objectKey } from "../../core/object_key.ts";
import type { Informer } from "./informer.ts";
import { compileLabelSelector } from "./_label_selector.ts";

/** Options of {@linkcode CacheReader.get}. */
export interface CacheGetOptions {
  /**
   * The object's namespace; ignored for cluster-scoped kinds.
   * @default the reader's default namespace (in a reconcile: the primary's)
   */
  namespace?: string;
}

/** Options of {@linkcode CacheReader.list}. */
export interface CacheListOptions {
  /**
   * Only objects in this namespace; ignored for cluster-scoped kinds.
   * @default every namespace cached
   */
  namespace?: string;
  /**
   * Only objects whose labels match, in API server syntax (`app=web,tier in (a,b)`) or as
   * exact `key: value` pairs.
   * @default every object
   */
  labelSelector?: string | Record<string, string>;
  /**
   * Only objects whose declared index holds the value, by index name, e.g.
   * `{ byOwner: "prod/nightly" }` (controller-runtime's `MatchingFields`); several entries
   * must all match.
   * @default no index
   */
  index?: Readonly<Record<string, string>>;
}

/**
 * Reads objects from a cache. Every object returned is frozen; see the module docs.
 *
 * @example Reading from a controller's cache
 * ```ts
 * import { reconcile } from "../controller/reconcile.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 * import { Deployment } from "../../core/kinds_workloads.ts";
 * import { defineResource } from "../../schema/define_resource.ts";
 * import { z } from "../../util/zod.ts";
 *
 * const Myapp = defineResource({
 *   group: "apps.example.com", version: "v1", kind: "Myapp",
 *   spec: z.object({ configMap: z.string() }),
 * });
 * const controller = reconcile(Myapp, {
 *   owns: [Deployment],
 *   reads: [ConfigMap],
 *   reconcile(app, ctx) {
 *     const config = ctx.cache.get(ConfigMap, app.spec.configMap); // the primary's namespace
 *     const deps = ctx.cache.list(Deployment, { labelSelector: { app: app.metadata.name! } });
 *     ctx.log.info("{n} Deployments, config {found}", { n: deps.length, found: !!config });
 *   },
 * });
 * if (controller.reads.length !== 1) throw new Error();
 * ```
 */
export interface CacheReader {
  /**
   * The cached object of a kind by name.
   *
   * @param res The kind, as declared (a `metadataOnly(...)` view for a metadata-only cache).
   * @param name The object's name.
   * @param options Its namespace.
   * @returns The frozen object, or `undefined` when the cache does not hold it.
   * @throws {TypeError} When the kind is not cached for this reader, the namespace is not
   * one it is cached in, or a namespaced kind is read without a namespace.
   */
  get<T extends KubeObject>(
    res: Resource<T>,
    name: string,
    options?: CacheGetOptions,
  ): T | undefined;
  /**
   * The cached objects of a kind, filtered by namespace, labels and indexes.
   *
   * @param res The kind, as declared.
   * @param options Namespace, label selector and index values.
   * @returns The frozen objects, in no particular order.
   * @throws {TypeError} When the kind is not cached for this reader, the namespace is not
   * one it is cached in, an index is not declared, or the label selector cannot be parsed.
   */
  list<T extends KubeObject>(res: Resource<T>, options?: CacheListOptions): T[];
}

/** One cached kind a {@linkcode InformerReader} answers from. */
export interface CachedSource {
  /** The kind, full or a `metadataOnly(...)` view. */
  readonly resource: Resource<any>;
  /**
   * One informer for every namespace, or one per entry of `namespaces`, in that order; none
   * while the kind is not served (an optional kind whose CRD is not installed), when reads
   * of it answer nothing: `get` → `undefined`, `list` → `[]`.
   */
  readonly informers: readonly Informer<any>[];
  /** The namespaces of `informers`, when it has one per namespace. */
  readonly namespaces?: readonly string[];
  /**
   * Index names as readers name them, mapped to the names of the stores' indexes.
   * @default {}
   */
  readonly indexes?: Readonly<Record<string, string>>;
}

/** Options of {@linkcode InformerReader}. */
export interface InformerReaderOptions {
  /** Who reads, as errors name it, e.g. `controller "myapp"`. */
  owner: string;
  /**
   * How to cache a kind that is not, appended to the error, e.g. `add it to reads`.
   * @default "declare it"
   */
  hint?: (res: Resource<any>) => string;
  /**
   * Namespace of `get` when none is given.
   * @default none: `get` of a namespaced kind needs a namespace
   */
  defaultNamespace?: string;
}

type Sources = Map<string, CachedSource>;

/**
 * A {@linkcode CacheReader} over informers: the kinds it was given, nothing else.
 *
 * @example Reading ConfigMaps from an informer
 * ```ts
 * import { InformerReader } from "./reader.ts";
 * import { informer } from "./informer.ts";
 * import { ConfigMap, Secret } from "../../core/kinds.ts";
 * const items = [{ metadata: { name: "a", namespace: "ns", resourceVersion: "1" } }];
 * const client = {
 *   list: <T,>() => Promise.resolve({ metadata: { resourceVersion: "1" }, items: items as T[] }),
 *   watchEvents: () => (async function* () {})(),
 * };
 * await using cms = informer(ConfigMap, { client }).start();
 * await cms.synced();
 * const reader = new InformerReader([{ resource: ConfigMap, informers: [cms] }], { owner: "a test" });
 * const cm = reader.get(ConfigMap, "a", { namespace: "ns" });
 * if (!cm || !Object.isFrozen(cm) || reader.list(ConfigMap).length !== 1) throw new Error();
 * let message = "";
 * try {
 *   reader.list(Secret);
 * } catch (e) {
 *   message = (e as Error).message;
 * }
 * if (!message.startsWith("Cannot read Secret (v1) from the cache of a test")) throw new Error(message);
 * ```
 */
export class InformerReader implements CacheReader {
  readonly #sources: Sources;
  readonly #opts: InformerReaderOptions;

  /**
   * Creates a reader over `sources`.
   *
   * @param sources The cached kinds, at most one per kind (full and metadata-only count apart).
   * @param options Owner and hint for errors, default namespace.
   * @throws {TypeError} When a kind is given twice.
   */
  constructor(sources: readonly CachedSource[] | Sources, options: InformerReaderOptions) {
    this.#opts = options;
    if (sources instanceof Map) {
      this.#sources = sources;
      return;
    }
    this.#sources = new Map();
    for (const s of sources) {
      const key = kindKey(s.resource);
      if (this.#sources.has(key)) {
        throw new TypeError(
          `Cannot create a cache reader for ${options.owner}: ${s.resource.kind} is given twice`,
        );
      }
      this.#sources.set(key, s);
    }
  }

  /**
   * The same reader with another default namespace for `get`.
   *
   * @param namespace The namespace.
   * @returns A reader sharing this one's sources.
   */
  withDefaultNamespace(namespace: string | undefined): InformerReader {
    return new InformerReader(this.#sources, { ...this.#opts, defaultNamespace: namespace });
  }

  /**
   * See {@linkcode CacheReader.get}.
   *
   * @param res The kind.
   * @param name The object's name.
   * @param options Its namespace.
   * @returns The frozen object, or `undefined`.
   * @throws {TypeError} When the kind or namespace is not cached, or no namespace is known.
   */
  get<T extends KubeObject>(
    res: Resource<T>,
    name: string,
    options: CacheGetOptions = {},
  ): T | undefined {
    const src = this.#source(res);
    const namespace = res.namespaced ? options.namespace ?? this.#opts.defaultNamespace : "";
    if (res.namespaced && !namespace) {
      throw new TypeError(
        `Cannot read ${res.kind} "${name}" from the cache of ${this.#opts.owner}: no namespace given`,
      );
    }
    const [inf] = this.#informers(src, res, namespace || undefined);
    // An optional kind the API server does not serve yet has no informer: nothing exists.
    if (!inf) return undefined;
    return inf.store.get(objectKey({ name, namespace: namespace || undefined })) as T | undefined;
  }

  /**
   * See {@linkcode CacheReader.list}.
   *
   * @param res The kind.
   * @param options Namespace, label selector and index values.
   * @returns The frozen objects.
   * @throws {TypeError} When the kind, namespace or an index is not cached.
   */
  list<T extends KubeObject>(res: Resource<T>, options: CacheListOptions = {}): T[] {
    const src = this.#source(res);
    const namespace = res.namespaced ? options.namespace : undefined;
    const index = Object.entries(options.index ?? {});
    const names = index.map(([name]) => {
      const stored = src.indexes?.[name];
      if (stored === undefined) {
        const known = Object.keys(src.indexes ?? {});
        throw new TypeError(
          `Cannot list ${res.kind} by index "${name}" from the cache of ${this.#opts.owner}: no such index; ${
            known.length ? `declared: ${known.map((k) => `"${k}"`).join(", ")}` : "none declared"
          }`,
        );
      }
      return stored;
    });
    let out: T[] = [];
    for (const inf of this.#informers(src, res, namespace)) {
      if (!index.length) {
        out.push(...inf.store.list(namespace !== undefined ? { namespace } : {}) as T[]);
        continue;
      }
      let objs = inf.store.byIndex(names[0], index[0][1]) as T[];
      for (let i = 1; i < index.length && objs.length; i++) {
        const also = new Set(inf.store.byIndex(names[i], index[i][1]));
        objs = objs.filter((o) => also.has(o));
      }
      if (namespace !== undefined) {
        objs = objs.filter((o) => (o.metadata.namespace ?? "") === namespace);
      }
      out.push(...objs);
    }
    if (options.labelSelector !== undefined) {
      const match = compileLabelSelector(options.labelSelector);
      out = out.filter((o) => match(o.metadata.labels));
    }
    return out;
  }

  /**
   * Whether `obj` of kind `res` would be in `list(res, options)` if the cache held it, e.g.
   * an object this controller wrote a moment ago that the cache has not shown yet.
   *
   * @param res The kind.
   * @param obj The object.
   * @param options As for `list`.
   * @returns `true` when it matches the namespace, label selector and index values.
   * @throws {TypeError} As `list` does.
   */
  matches<T extends KubeObject>(res: Resource<T>, obj: T, options: CacheListOptions = {}): boolean {
    const src = this.#source(res);
    if (res.namespaced && options.namespace !== undefined) {
      if ((obj.metadata.namespace ?? "") !== options.namespace) return false;
    }
    const [inf] = this.#informers(src, res, res.namespaced ? obj.metadata.namespace : undefined);
    for (const [name, value] of Object.entries(inf ? options.index ?? {} : {})) {
      const stored = src.indexes?.[name];
      if (stored === undefined) this.list(res, { index: { [name]: value } }); // throws
      try {
        if (!inf.store.valuesOf(stored!, obj).includes(value)) return false;
      } catch {
        return false;
      }
    }
    if (options.labelSelector !== undefined) {
      return compileLabelSelector(options.labelSelector)(obj.metadata.labels);
    }
    return true;
  }

  /**
   * The informer that caches `obj`'s kind in `obj`'s namespace, if this reader has one.
   *
   * @param res The kind, full or `metadataOnly(...)`: either cache answers.
   * @param namespace The namespace (ignored for cluster-scoped kinds).
   * @returns The informer, or `undefined` when the kind or namespace is not cached.
   */
  informerOf(res: Resource<any>, namespace: string | undefined): Informer<any> | undefined {
    const src = this.#sources.get(kindKey(res)) ??
      this.#sources.get(kindKey(res, { metadataOnly: !isMetadataOnly(res) }));
    if (!src) return undefined;
    if (!src.namespaces || !res.namespaced) return src.informers[0];
    const i = src.namespaces.indexOf(namespace ?? "");
    return i < 0 ? undefined : src.informers[i];
  }

  #source(res: Resource<any>): CachedSource {
    const src = this.#sources.get(kindKey(res));
    if (src) return src;
    const what =
      `Cannot read ${res.kind} (${res.apiVersion}) from the cache of ${this.#opts.owner}`;
    if (isMetadataOnly(res) && this.#sources.has(kindKey(res, { metadataOnly: false }))) {
      throw new TypeError(
        `${what} metadata-only: it is cached in full; read ${res.kind} itself, or declare metadataOnly(${res.kind})`,
      );
    }
    if (!isMetadataOnly(res) && this.#sources.has(kindKey(res, { metadataOnly: true }))) {
      throw new TypeError(
        `${what}: it is cached metadata-only; read metadataOnly(${res.kind}), or declare ${res.kind} itself`,
      );
    }
    throw new TypeError(
      `${what}: it is not declared; ${this.#opts.hint?.(res) ?? "declare it"}`,
    );
  }

  #informers(src: CachedSource, res: Resource<any>, namespace: string | undefined) {
    if (!src.namespaces || namespace === undefined) return src.informers;
    const i = src.namespaces.indexOf(namespace);
    if (i < 0) {
      throw new TypeError(
        `Cannot read ${res.kind} in namespace "${namespace}" from the cache of ${this.#opts.owner}: it is cached only in ${
          src.namespaces.map((n) => `"${n}"`).join(", ")
        }`,
      );
    }
    return src.informers.length ? [src.informers[i]] : [];
  }
}
