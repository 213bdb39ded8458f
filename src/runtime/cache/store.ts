/**
 * An in-memory, indexed cache of Kubernetes objects: what an informer keeps up to date and
 * what controllers read instead of asking the API server.
 *
 * @module
 */
import type { KubeObject } from "../../core/object.ts";
import { objectKey, type ObjectName } from "../../core/object_key.ts";
import { compileLabelSelector } from "./_label_selector.ts";

/**
 * Computes the index values of one object, e.g. the names of the nodes a pod runs on.
 * An object may have any number of values, including none.
 */
export type IndexFunc<T> = (obj: T) => string[];

/** Options for {@linkcode Store}. */
export interface StoreOptions<T> {
  /**
   * User indexes by name, each computing index values from an object.
   * @default {}
   */
  indexes?: Record<string, IndexFunc<T>>;
}

/** Options for {@linkcode Store.prototype.list}. */
export interface StoreListOptions {
  /**
   * Only objects in this namespace.
   * @default every namespace
   */
  namespace?: string;
  /**
   * Only objects whose labels match, in API server syntax (`app=web,tier in (a,b),!legacy`)
   * or as exact `key: value` pairs.
   * @default every object
   */
  labelSelector?: string | Record<string, string>;
}

/** What {@linkcode Store.prototype.replace} changed, for emitting events. */
export interface StoreChanges<T> {
  /** Objects that were not in the store before. */
  added: T[];
  /** Objects whose `resourceVersion` changed, with the previous and the new version. */
  updated: { old: T; new: T }[];
  /** Objects that were in the store and are absent from the new list. */
  deleted: T[];
}

interface Index<T> {
  fn: IndexFunc<T>;
  values: Map<string, Set<string>>;
}

/**
 * A map of objects by `namespace/name`, with a built-in namespace index and user indexes.
 *
 * Guarantees: every read reflects every write before it; index lookups and `list` return
 * the stored objects themselves, in no particular order.
 *
 * Caveats: objects are shared with every reader and are not copied; treat them as
 * read-only, or the cache and the cluster will disagree.
 *
 * @typeParam T The object type.
 *
 * @example Indexing pods by node
 * ```ts
 * import { Store } from "./store.ts";
 * type Pod = { metadata: { name: string; namespace: string }; spec: { nodeName: string } };
 * const pods = new Store<Pod>({ indexes: { node: (p) => [p.spec.nodeName] } });
 * pods.upsert({ metadata: { name: "a", namespace: "ns" }, spec: { nodeName: "n1" } });
 * pods.upsert({ metadata: { name: "b", namespace: "ns" }, spec: { nodeName: "n2" } });
 * if (pods.byIndex("node", "n1")[0].metadata.name !== "a") throw new Error();
 * if (pods.get("ns/b")?.spec.nodeName !== "n2") throw new Error();
 * ```
 */
export class Store<T extends KubeObject> {
  #items = new Map<string, T>();
  #namespaces = new Map<string, Set<string>>();
  #indexes = new Map<string, Index<T>>();
  #resourceVersion: string | undefined;

  /**
   * Creates an empty store.
   *
   * @param options User indexes.
   */
  constructor(options: StoreOptions<T> = {}) {
    for (const [name, fn] of Object.entries(options.indexes ?? {})) this.addIndex(name, fn);
  }

  /**
   * The number of objects held.
   *
   * @returns The count.
   */
  get size(): number {
    return this.#items.size;
  }

  /**
   * The `resourceVersion` of the last list replaced or object written, if known.
   *
   * @returns The resource version.
   */
  get resourceVersion(): string | undefined {
    return this.#resourceVersion;
  }

  /**
   * Adds a user index and indexes the objects already held.
   *
   * @param name The index name.
   * @param fn Computes an object's index values.
   * @throws {TypeError} When an index of that name exists.
   */
  addIndex(name: string, fn: IndexFunc<T>): void {
    if (this.#indexes.has(name)) {
      throw new TypeError(`Cannot add index "${name}": an index of that name exists`);
    }
    const index: Index<T> = { fn, values: new Map() };
    this.#indexes.set(name, index);
    for (const [key, obj] of this.#items) addTo(index.values, fn(obj), key);
  }

  /**
   * Whether a user index of that name exists.
   *
   * @param name The index name.
   * @returns True when it exists.
   */
  hasIndex(name: string): boolean {
    return this.#indexes.has(name);
  }

  /**
   * The objects whose index values include `value`.
   *
   * @param name The index name.
   * @param value The index value.
   * @returns The matching objects.
   * @throws {RangeError} When no index of that name exists.
   */
  byIndex(name: string, value: string): T[] {
    const index = this.#indexes.get(name);
    if (!index) throw new RangeError(`Cannot look up index "${name}": no such index`);
    return this.#resolve(index.values.get(value));
  }

  /**
   * The values an index currently holds.
   *
   * @param name The index name.
   * @returns The distinct index values.
   * @throws {RangeError} When no index of that name exists.
   */
  indexValues(name: string): string[] {
    const index = this.#indexes.get(name);
    if (!index) throw new RangeError(`Cannot look up index "${name}": no such index`);
    return [...index.values.keys()];
  }

  /**
   * The object with this key or name.
   *
   * @param key A key from {@linkcode objectKey} or a name and namespace.
   * @returns The object, or `undefined` when absent.
   */
  get(key: string | ObjectName): T | undefined {
    return this.#items.get(typeof key === "string" ? key : objectKey(key));
  }

  /**
   * Whether the object with this key or name is held.
   *
   * @param key A key from {@linkcode objectKey} or a name and namespace.
   * @returns True when present.
   */
  has(key: string | ObjectName): boolean {
    return this.#items.has(typeof key === "string" ? key : objectKey(key));
  }

  /**
   * The objects, optionally only those in one namespace or matching a label selector.
   *
   * @param options Namespace and label filters.
   * @returns The matching objects.
   * @throws {TypeError} When the label selector cannot be parsed.
   */
  list(options: StoreListOptions = {}): T[] {
    const all = options.namespace !== undefined
      ? this.#resolve(this.#namespaces.get(options.namespace))
      : [...this.#items.values()];
    if (options.labelSelector === undefined) return all;
    const match = compileLabelSelector(options.labelSelector);
    return all.filter((o) => match(o.metadata.labels));
  }

  /**
   * The keys of every object held.
   *
   * @returns The keys.
   */
  keys(): string[] {
    return [...this.#items.keys()];
  }

  /**
   * Adds or replaces an object.
   *
   * @param obj The object.
   * @returns The object it replaced, or `undefined` when it was new.
   * @throws {TypeError} When the object has no name.
   */
  upsert(obj: T): T | undefined {
    const key = objectKey(obj);
    const old = this.#items.get(key);
    if (old) this.#unindex(key, old);
    this.#items.set(key, obj);
    this.#index(key, obj);
    this.#resourceVersion = obj.metadata.resourceVersion ?? this.#resourceVersion;
    return old;
  }

  /**
   * Removes an object.
   *
   * @param key The object, its key, or its name and namespace.
   * @returns The removed object, or `undefined` when it was absent.
   */
  delete(key: string | ObjectName | T): T | undefined {
    const k = typeof key === "string" ? key : objectKey(key);
    const old = this.#items.get(k);
    if (typeof key === "object" && "metadata" in key && key.metadata.resourceVersion) {
      this.#resourceVersion = key.metadata.resourceVersion;
    }
    if (!old) return undefined;
    this.#unindex(k, old);
    this.#items.delete(k);
    return old;
  }

  /**
   * Replaces the whole content with a fresh list, as after a relist.
   *
   * @param items The complete new content.
   * @param resourceVersion The list's `resourceVersion`.
   * @returns What was added, updated (changed `resourceVersion`) and deleted.
   * @throws {TypeError} When an object has no name.
   *
   * @example Finding deletions a relist revealed
   * ```ts
   * import { Store } from "./store.ts";
   * const s = new Store();
   * s.replace([{ metadata: { name: "a" } }, { metadata: { name: "b" } }], "1");
   * const { deleted, added } = s.replace([{ metadata: { name: "b" } }, { metadata: { name: "c" } }], "9");
   * if (deleted[0].metadata.name !== "a" || added[0].metadata.name !== "c") throw new Error();
   * if (s.resourceVersion !== "9") throw new Error();
   * ```
   */
  replace(items: Iterable<T>, resourceVersion?: string): StoreChanges<T> {
    const changes: StoreChanges<T> = { added: [], updated: [], deleted: [] };
    const seen = new Set<string>();
    for (const obj of items) {
      const key = objectKey(obj);
      seen.add(key);
      const old = this.upsert(obj);
      if (!old) changes.added.push(obj);
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) {
        changes.updated.push({ old, new: obj });
      }
    }
    for (const [key, obj] of this.#items) {
      if (!seen.has(key)) {
        this.#unindex(key, obj);
        this.#items.delete(key);
        changes.deleted.push(obj);
      }
    }
    this.#resourceVersion = resourceVersion;
    return changes;
  }

  /**
   * Iterates over every object held.
   *
   * @returns An iterator of the objects.
   */
  [Symbol.iterator](): IterableIterator<T> {
    return this.#items.values();
  }

  #resolve(keys: Set<string> | undefined): T[] {
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) out.push(this.#items.get(k)!);
    return out;
  }

  #index(key: string, obj: T): void {
    addTo(this.#namespaces, [obj.metadata.namespace ?? ""], key);
    for (const index of this.#indexes.values()) addTo(index.values, index.fn(obj), key);
  }

  #unindex(key: string, obj: T): void {
    removeFrom(this.#namespaces, [obj.metadata.namespace ?? ""], key);
    for (const index of this.#indexes.values()) removeFrom(index.values, index.fn(obj), key);
  }
}

function addTo(map: Map<string, Set<string>>, values: string[], key: string): void {
  for (const v of values) {
    let set = map.get(v);
    if (!set) map.set(v, set = new Set());
    set.add(key);
  }
}

function removeFrom(map: Map<string, Set<string>>, values: string[], key: string): void {
  for (const v of values) {
    const set = map.get(v);
    if (!set) continue;
    set.delete(key);
    if (set.size === 0) map.delete(v);
  }
}
