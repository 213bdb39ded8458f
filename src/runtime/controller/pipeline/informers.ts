/**
 * The informers one controller holds, by kind: for every kind it caches (primary, owned,
 * watched, read), one shared informer from the factory per watched namespace (or one for all),
 * with the controller's indexes under names of its own, and the reader over them that
 * `ctx.cache` and map functions use. The sources stage (`sources.ts`) decides when a kind is
 * held and wires its events; this only holds.
 *
 * @module
 */
import { kindKey } from "../../../core/kind_key.ts";
import type { KubeObject } from "../../../core/object.ts";
import { parseObjectKey } from "../../../core/object_key.ts";
import type { Resource } from "../../../core/resource.ts";
import { isMetadataOnly } from "../../../core/metadata_only.ts";
import type { Informer } from "../../cache/informer.ts";
import type { InformerFactory, InformerHold } from "../../cache/informer_factory.ts";
import { type CachedSource, InformerReader } from "../../cache/reader.ts";
import type { ShardFilter } from "../../cache/shard_filter.ts";
import type { CachedKind } from "../caches.ts";
import type { Controller } from "../reconcile.ts";
import { isSharded } from "./write_gate.ts";

/** What {@linkcode ControllerInformers} holds informers from. */
export interface ControllerInformersInit {
  /** The controller. */
  readonly controller: Controller<any>;
  /** The shared informers. */
  readonly factory: InformerFactory;
  /** Namespaces to cache namespaced kinds in; all when `undefined`. */
  readonly namespaces: readonly string[] | undefined;
  /** This replica's share, when sharded. */
  readonly shard?: { filter: ShardFilter; owned: boolean };
}

/**
 * The informers of one controller, by kind key, and its cache reader.
 *
 * @typeParam T The primary object type.
 */
export class ControllerInformers<T extends KubeObject> {
  readonly #init: ControllerInformersInit;
  // Every cached kind's informers, by kind key: the live map the reader answers from.
  readonly #sources = new Map<string, CachedSource>();
  readonly #all: Informer<any>[] = [];
  readonly #reader: InformerReader;
  #primary: { informers: Informer<T>[]; namespaces?: readonly string[] } | undefined;

  /** @param init The controller, the factory, its namespaces and shard. */
  constructor(init: ControllerInformersInit) {
    this.#init = init;
    const name = init.controller.name;
    // Over the live map: a watch added at run time is readable at once.
    this.#reader = new InformerReader(this.#sources, {
      owner: `controller "${name}"`,
      hint: (res) => {
        const k = isMetadataOnly(res) ? `metadataOnly(${res.kind})` : res.kind;
        return `add it to reads: [${k}] (or to owns or watches), or read it uncached through ctx.client`;
      },
    });
  }

  /**
   * Reads the controller's cache, as `ctx.cache` does (without a default namespace).
   *
   * @returns The reader.
   */
  get reader(): InformerReader {
    return this.#reader;
  }

  /**
   * The distinct informers held, for health and readiness.
   *
   * @returns The informers (shared with other controllers).
   */
  get all(): readonly Informer<any>[] {
    return this.#all;
  }

  /**
   * The primary kind's informers.
   *
   * @returns Them, one per namespace or one for all.
   */
  get primary(): readonly Informer<T>[] {
    return this.#primary?.informers ?? [];
  }

  /**
   * Whether a kind has its place in the cache (held, or left out until served).
   *
   * @param key Its kind key.
   * @returns `true` when it has.
   */
  has(key: string): boolean {
    return this.#sources.has(key);
  }

  /**
   * The informers of one kind.
   *
   * @param key Its kind key.
   * @returns Them; none when the kind is left out.
   */
  of(key: string): readonly Informer<any>[] {
    return this.#sources.get(key)?.informers ?? [];
  }

  /**
   * Holds the informers of one cached kind, one per watched namespace; `holds` collects them
   * as releasable holds instead (a kind held at run time).
   *
   * @param kind The cached kind.
   * @param holds Where releasable holds go, for a kind held at run time.
   * @returns Its informers.
   */
  hold(kind: CachedKind, holds?: InformerHold<any>[]): readonly Informer<any>[] {
    const { factory, controller, shard } = this.#init;
    const res = kind.resource;
    const namespaces = res.namespaced ? kind.namespaces ?? this.#init.namespaces : undefined;
    const prefix = `${controller.name}/`;
    const query = {
      ...(shard && isSharded(kind, shard) ? { shard: shard.filter } : {}),
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
    const key = kindKey(res);
    this.#sources.set(key, {
      resource: res,
      informers,
      ...(namespaces ? { namespaces } : {}),
      indexes: Object.fromEntries(Object.keys(kind.indexes).map((name) => [name, prefix + name])),
    });
    if (key === kindKey(controller.resource)) {
      this.#primary = { informers: informers as Informer<T>[], namespaces };
    }
    return informers;
  }

  /**
   * Leaves a kind out of the cache: reads of it answer nothing (an optional kind not served).
   *
   * @param res The kind.
   */
  leaveOut(res: Resource<any>): void {
    this.#drop(kindKey(res));
    this.#sources.set(kindKey(res), { resource: res, informers: [] });
  }

  /**
   * Forgets a kind held at run time: it is no longer read.
   *
   * @param res The kind.
   */
  remove(res: Resource<any>): void {
    this.#drop(kindKey(res));
    this.#sources.delete(kindKey(res));
  }

  /**
   * A primary from the cache.
   *
   * @param key The primary's key.
   * @returns The cached (frozen) object, or `undefined`.
   */
  get(key: string): T | undefined {
    const primary = this.#primary;
    if (!primary) return undefined;
    if (primary.informers.length === 1) return primary.informers[0].get(key);
    const ns = parseObjectKey(key).namespace ?? "";
    const i = primary.namespaces!.indexOf(ns);
    return i < 0 ? undefined : primary.informers[i].get(key);
  }

  /**
   * The keys of every cached primary.
   *
   * @returns Them.
   */
  primaryKeys(): string[] {
    return this.primary.flatMap((inf) => [...inf.store.keys()]);
  }

  #drop(key: string): void {
    for (const inf of this.#sources.get(key)?.informers ?? []) {
      const i = this.#all.indexOf(inf);
      if (i >= 0) this.#all.splice(i, 1);
    }
  }
}
