/**
 * `ctx.cache`: the controller's cache as one reconcile reads it. While the primary has writes
 * the cache has not shown yet, the objects this controller created or changed are shown as the
 * server answered, and the ones it deleted are left out — read-your-own-writes inside the
 * reconcile, before the informers catch up.
 *
 * @module
 */
import { compareResourceVersions, type KubeObject } from "../../../core/object.ts";
import { objectKey } from "../../../core/object_key.ts";
import type { Resource } from "../../../core/resource.ts";
import type { CacheGetOptions, CacheListOptions, CacheReader } from "../../cache/reader.ts";
import type { OwnWrite, Tracking } from "./tracking.ts";

/**
 * The cache of one reconcile, with its own writes shown until the cache has them.
 *
 * @param cache The controller's cache, its default namespace set.
 * @param tracking Where the reconcile's writes are kept; without it, `cache` itself.
 * @param namespace The primary's namespace, the default of `get`.
 * @returns The reader.
 */
export function contextCache(
  cache: CacheReader,
  tracking: Tracking | undefined,
  namespace: string | undefined,
): CacheReader {
  return tracking ? new OwnWritesReader(cache, tracking, namespace) : cache;
}

/** The cache, overlaid with the primary's writes it has not shown. */
class OwnWritesReader implements CacheReader {
  readonly #inner: CacheReader;
  readonly #tracking: Tracking;
  readonly #namespace: string | undefined;

  constructor(inner: CacheReader, tracking: Tracking, namespace: string | undefined) {
    this.#inner = inner;
    this.#tracking = tracking;
    this.#namespace = namespace;
  }

  get<U extends KubeObject>(
    res: Resource<U>,
    name: string,
    options: CacheGetOptions = {},
  ): U | undefined {
    const cached = this.#inner.get(res, name, options);
    const pending = this.#tracking.pending(res);
    if (!pending.length) return cached;
    const ns = res.namespaced ? options.namespace ?? this.#namespace : undefined;
    const key = objectKey({ name, namespace: ns });
    const w = pending.find((w) => w.key === key);
    return w ? shown(cached, w) as U | undefined : cached;
  }

  list<U extends KubeObject>(res: Resource<U>, options: CacheListOptions = {}): U[] {
    const cached = this.#inner.list(res, options);
    const pending = this.#tracking.pending(res);
    if (!pending.length) return cached;
    const byKey = new Map<string, U>(cached.map((o) => [objectKey(o), o]));
    for (const w of pending) {
      const held = byKey.get(w.key);
      const obj = shown(held, w) as U | undefined;
      if (obj === held) continue;
      if (obj && this.#tracking.matches(res, obj, options)) byKey.set(w.key, obj);
      else byKey.delete(w.key);
    }
    return [...byKey.values()];
  }
}

/** What the cache would show of an object after the write `w`. */
function shown(cached: KubeObject | undefined, w: OwnWrite): KubeObject | undefined {
  const rv = cached?.metadata.resourceVersion;
  if (cached && w.rv && rv && (rv === w.rv || compareResourceVersions(rv, w.rv) > 0)) {
    return cached;
  }
  if (cached && w.uid && cached.metadata.uid && cached.metadata.uid !== w.uid) return cached;
  if (w.op === "delete") return w.object?.metadata.deletionTimestamp ? w.object : undefined;
  return w.object ?? cached;
}
