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
  /**
   * Objects of the new list that could not be stored, because they have no name or an index
   * function threw on them; the version held before (if any) was kept instead.
   */
  rejected: { object: T; error: unknown }[];
}

interface Index<T> {
  fn: IndexFunc<T>;
  values: Map<string, Set<string>>;
}

/** An object's index values, computed once when it is stored: `[namespace, ...per index]`. */
type IndexValues = string[][];

/**
 * A map of objects by `namespace/name`, with a built-in namespace index and user indexes.
 *
 * Guarantees: every read reflects every write before it; index lookups and `list` return
 * the stored objects themselves, in no particular order. Writes are all or nothing: an index
 * function that throws leaves the store as it was (`upsert` throws; `replace` keeps the
 * previous version of that one object and reports it in `rejected`), and an object is
 * unindexed with the values computed when it was stored, never by calling the functions
 * again.
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
  // The user index values each object was indexed under (one array per index, in order),
  // kept only while the store has user indexes: the namespace index is read from the stored
  // object itself, so a store without user indexes keeps no per-object arrays (about 70
  // bytes of heap per object, measured with 10,000 ConfigMaps).
  #indexed = new Map<string, IndexValues>();
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
    // Computed for every object first: a throwing function adds no index at all.
    const computed = [...this.#items].map(([key, obj]) => [key, fn(obj)] as const);
    const index: Index<T> = { fn, values: new Map() };
    this.#indexes.set(name, index);
    for (const [key, values] of computed) {
      addTo(index.values, values, key);
      const held = this.#indexed.get(key);
      if (held) held.push(values);
      else this.#indexed.set(key, [values]);
    }
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
   * The values index `name` gives `obj`, whether the store holds it or not (e.g. to tell
   * whether an object written a moment ago belongs in an index lookup).
   *
   * @param name The index name.
   * @param obj The object.
   * @returns Its index values.
   * @throws {RangeError} When no index of that name exists.
   * @throws What the index function throws.
   */
  valuesOf(name: string, obj: T): string[] {
    const index = this.#indexes.get(name);
    if (!index) throw new RangeError(`Cannot look up index "${name}": no such index`);
    return [...index.fn(obj)];
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
    const values = this.#values(obj);
    const old = this.#items.get(key);
    this.#put(key, obj, values);
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
    this.#unindex(k);
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
    const changes: StoreChanges<T> = { added: [], updated: [], deleted: [], rejected: [] };
    // First everything that can throw, per object: its key (a nameless object is rejected)
    // and its index values (a throwing index keeps that object's previous version).
    const next = new Map<string, { obj: T; values: IndexValues } | undefined>();
    for (const obj of items) {
      let key: string;
      try {
        key = objectKey(obj);
      } catch (error) {
        changes.rejected.push({ object: obj, error });
        continue;
      }
      try {
        next.set(key, { obj, values: this.#values(obj) });
      } catch (error) {
        changes.rejected.push({ object: obj, error });
        next.set(key, undefined); // seen: not deleted, not replaced
      }
    }
    for (const [key, entry] of next) {
      if (!entry) continue;
      const old = this.#items.get(key);
      this.#put(key, entry.obj, entry.values);
      if (!old) changes.added.push(entry.obj);
      else if (old.metadata.resourceVersion !== entry.obj.metadata.resourceVersion) {
        changes.updated.push({ old, new: entry.obj });
      }
    }
    for (const [key, obj] of [...this.#items]) {
      if (!next.has(key)) {
        this.#unindex(key);
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

  /** Every user index value of `obj`; throws what an index function throws, changing nothing. */
  #values(obj: T): IndexValues {
    if (this.#indexes.size === 0) return NO_VALUES;
    const out: IndexValues = [];
    for (const index of this.#indexes.values()) out.push([...index.fn(obj)]);
    return out;
  }

  /** Stores `obj` under `key` with its precomputed values; cannot throw. */
  #put(key: string, obj: T, values: IndexValues): void {
    this.#unindex(key);
    this.#items.set(key, obj);
    addTo(this.#namespaces, [obj.metadata.namespace ?? ""], key);
    if (values.length === 0) return;
    this.#indexed.set(key, values);
    let i = 0;
    for (const index of this.#indexes.values()) addTo(index.values, values[i++] ?? [], key);
  }

  /** Removes `key` from every index, with the values it was indexed under. */
  #unindex(key: string): void {
    const old = this.#items.get(key);
    if (!old) return;
    removeFrom(this.#namespaces, [old.metadata.namespace ?? ""], key);
    const values = this.#indexed.get(key);
    if (!values) return;
    this.#indexed.delete(key);
    let i = 0;
    for (const index of this.#indexes.values()) removeFrom(index.values, values[i++] ?? [], key);
  }
}

const NO_VALUES: IndexValues = [];

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
