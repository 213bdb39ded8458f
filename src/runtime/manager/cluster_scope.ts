/**
 * `ClusterScope`: what one cluster runs under a {@linkcode Manager} — its shared informers,
 * one controller runtime per controller, and the kinds it follows — as runnables of the
 * manager's groups (the informers and the served kinds in `cache`, the controllers in
 * `leader`). A single-cluster manager has one scope, on its own client; a fleet manager has
 * one per engaged member, added when the member is engaged and removed (controllers first,
 * then informers) when it is disengaged. Readiness, liveness and `reconcileAll` are per scope.
 *
 * @module
 */
import { getLogger } from "../../util/log.ts";
import { firstLine } from "../../util/cli_io.ts";
import type { Client } from "../../client/client.ts";
import type { ControllerMetricsHooks } from "../controller/metrics_hooks.ts";
import { ControllerRuntime } from "../controller/pipeline/runner.ts";
import type { Informer } from "../cache/informer.ts";
import { InformerFactory, type InformerFactoryOptions } from "../cache/informer_factory.ts";
import { ServedKinds } from "../cache/served_kinds.ts";
import type { RateLimiter } from "../queue/rate_limiter.ts";
import type { Controller } from "../controller/reconcile.ts";
import type { ShardFilter } from "../cache/shard_filter.ts";
import type { Runnable } from "./runnable.ts";

const log = getLogger(["kubeno", "manager"]);

/** What a scope is built from. */
export interface ClusterScopeOptions {
  /** The controllers, from `reconcile()`. */
  controllers: readonly Controller<any>[];
  /** The cluster's client. */
  client: Client;
  /** The cluster's name in a fleet (`ctx.cluster`); none for a single cluster. */
  cluster?: string;
  /** Namespaces to watch namespaced kinds in; all when absent. */
  namespaces?: readonly string[];
  /** Metrics hooks of the controllers. */
  metrics?: ControllerMetricsHooks;
  /** Each controller's rate limiter. */
  rateLimiter?: (controller: string) => RateLimiter<string>;
  /** Whether the queues serve real changes first. */
  priorityQueue?: boolean;
  /** Options shared by the informers. */
  informerOptions?: Omit<InformerFactoryOptions, "client">;
  /** How long stopping the controllers waits for in-flight reconciles, in milliseconds. */
  shutdownTimeoutMs: number;
  /** The objects this replica owns, when sharded by object. */
  shard?: { filter: ShardFilter; owned: boolean };
  /**
   * Where a failure of this scope's runnables goes instead of stopping the manager: a
   * member cluster's fault stops no other member.
   * @default the manager stops, as for its own cluster
   */
  onFault?: (error: unknown) => void;
}

/** One cluster's informers and controllers, as runnables. */
export class ClusterScope {
  /** The cluster's name in a fleet. */
  readonly cluster: string | undefined;
  /** The cluster's client. */
  readonly client: Client;
  /** The shared informer factory. */
  readonly informers: InformerFactory;
  /** One runtime per controller. */
  readonly runtimes: readonly ControllerRuntime<any>[];
  /** What the manager starts and stops, in their groups. */
  readonly runnables: readonly Runnable[];
  #late = false;

  /**
   * Builds the informer factory, the controllers' runtimes and their runnables; nothing runs
   * until the manager starts the runnables.
   *
   * @param o The controllers, the client and their options.
   */
  constructor(o: ClusterScopeOptions) {
    this.cluster = o.cluster;
    this.client = o.client;
    const informers = new InformerFactory({ ...o.informerOptions, client: o.client });
    this.informers = informers;
    this.runtimes = o.controllers.map((c) =>
      new ControllerRuntime(c, {
        client: o.client,
        informers,
        namespaces: o.namespaces,
        metrics: o.metrics,
        rateLimiter: o.rateLimiter?.(c.name),
        priorityQueue: o.priorityQueue,
        deferOptional: true,
        cluster: o.cluster,
        ...(o.shard ? { shard: o.shard } : {}),
      })
    );
    const runnables: Runnable[] = [{
      name: this.#named("informers"),
      group: "cache",
      start: () => void informers.start(),
      stop: () => informers.stop(),
    }];
    const served = this.#servedKinds();
    if (served) runnables.push(served);
    for (const r of this.runtimes) {
      runnables.push({
        name: this.#named(`controller ${r.controller.name}`),
        group: "leader",
        start: ({ signal }) => r.start(signal),
        stop: async (reason) => {
          const timeoutMs = reason === "urgent" ? 0 : o.shutdownTimeoutMs;
          const why = reason === "urgent" ? "leadership lost" : "shutting down";
          if (!await r.stop(timeoutMs, why)) this.#late = true;
        },
      });
    }
    const fault = o.onFault;
    this.runnables = Object.freeze(fault ? runnables.map((r) => isolated(r, fault)) : runnables);
  }

  /** Whether a controller's stop gave up on in-flight reconciles. */
  get late(): boolean {
    return this.#late;
  }

  /**
   * Readiness: every controller's caches synced.
   *
   * @returns `true` when synced.
   */
  synced(): boolean {
    return this.runtimes.every((r) => r.synced);
  }

  /**
   * Liveness: no informer failing once it synced.
   *
   * @returns `true` when healthy.
   */
  healthy(): boolean {
    return this.allInformers().every((inf) => !inf.hasSynced || inf.error === undefined);
  }

  /**
   * Every informer the controllers read from, once each.
   *
   * @returns The informers.
   */
  allInformers(): Informer<any>[] {
    return [...new Set(this.runtimes.flatMap((r) => [...r.informers]))];
  }

  /**
   * Queues every cached primary of a controller, or of every controller.
   *
   * @param controller The controller's name; every controller when absent.
   * @returns How many keys were queued.
   */
  reconcileAll(controller?: string): number {
    return this.runtimes
      .filter((r) => controller === undefined || r.controller.name === controller)
      .reduce((n, r) => n + r.reconcileAll(), 0);
  }

  #named(what: string): string {
    return this.cluster === undefined ? what : `${what} of cluster ${this.cluster}`;
  }

  /**
   * Optional kinds: one `ServedKinds` for all controllers, started with the informers (after
   * the manager's `startup` hook), tells each runtime when a kind it left out is served or
   * gone.
   */
  #servedKinds(): Runnable | undefined {
    const optional = this.runtimes.filter((r) => r.optionalKinds.length);
    if (!optional.length) return undefined;
    const served = new ServedKinds({ client: this.client, informers: this.informers });
    for (const r of optional) {
      for (const res of r.optionalKinds) {
        served.follow(res, (now) => {
          r.served(res, now).catch((err) =>
            log.error("Cannot change what controller {controller} caches: {error}", {
              controller: r.controller.name,
              error: firstLine(err),
            })
          );
        });
      }
    }
    return {
      name: this.#named("served kinds"),
      group: "cache",
      start: ({ signal }) => served.start(signal),
      stop: () => served.stop(),
    };
  }
}

/** `r`, its failures reported to `onFault` instead of the manager. */
function isolated(r: Runnable, onFault: (error: unknown) => void): Runnable {
  return {
    ...r,
    start: async (ctx) => {
      try {
        await r.start({ ...ctx, fail: (error) => onFault(error) });
      } catch (err) {
        if (!ctx.signal.aborted) onFault(err);
      }
    },
  };
}
