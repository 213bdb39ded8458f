/**
 * `createManager()`: runs controllers on one client and one set of shared informers, with
 * readiness and health for probes, hooks for leader election and metrics, and a graceful
 * shutdown. The operator CLI calls `createManager({...}).start(signal)`.
 *
 * ## Flow
 *
 * `start(signal)`: create the client (unless given), build one {@linkcode ControllerRuntime}
 * per controller on a shared `InformerFactory` (queues fill from the start), start the
 * informers, wait for `leaderElection` (if set), then start each controller once its caches
 * have synced. With `sharding` instead, every replica runs at once and reconciles its share:
 * a `ShardCoordinator` takes and hands off shards through Leases, the primaries' informers
 * follow its filter, and a shard is released only after the controllers' reconciles of its
 * objects ended. When `signal` aborts (or leadership or sharding membership is lost): stop
 * taking new work, wait up to `shutdownTimeoutMs` for in-flight reconciles, release the
 * shards, close the watches and the client the manager created, and resolve.
 *
 * ## Guarantees
 *
 * - Every controller reads from the same informers; a kind+namespace is watched once.
 * - No reconcile starts before its caches synced, before leadership, or after shutdown began.
 * - `start()` resolves only after shutdown completed; it installs signal handlers only with
 *   `handleSignals: true`.
 *
 * @module
 */
import { getLogger } from "../../util/log.ts";
import { type Client, type ClientOptions, createClient } from "../../client/client.ts";
import { type ControllerMetricsHooks, ControllerRuntime } from "../controller/runner.ts";
import type { Informer, InformerHealth } from "../cache/informer.ts";
import { InformerFactory, type InformerFactoryOptions } from "../cache/informer_factory.ts";
import type { RateLimiter } from "../queue/rate_limiter.ts";
import type { Controller } from "../controller/reconcile.ts";
import { parseObjectKey } from "../../core/object_key.ts";
import {
  ShardCoordinator,
  type ShardCoordinatorOptions,
  type ShardingEnd,
} from "../sharding/coordinator.ts";

const log = getLogger(["kubeno", "manager"]);

/** What a `leaderElection` hook gets. */
export interface LeaderElectionContext {
  /** The manager's client, e.g. to read and renew a Lease. */
  client: Client;
  /** Aborted when the manager shuts down; stop campaigning and release the lease. */
  signal: AbortSignal;
  /**
   * Call when leadership is lost after it was acquired: the manager shuts down gracefully
   * and `start()` rejects with an error carrying `reason` as its cause.
   */
  lost(reason?: unknown): void;
}

/** Options of {@linkcode createManager}. */
export interface ManagerOptions {
  /** The controllers to run, from `reconcile()`. */
  controllers: readonly Controller<any>[];
  /**
   * The client for every controller and informer.
   * @default createClient(clientOptions) at start, closed at shutdown
   */
  client?: Client;
  /**
   * Options of the client the manager creates when `client` is not given (kubeconfig,
   * context, `onRequest` metrics hook...).
   * @default {}
   */
  clientOptions?: ClientOptions;
  /**
   * Namespaces to watch namespaced kinds in; cluster-scoped kinds are always watched
   * cluster-wide.
   * @default all namespaces
   */
  namespaces?: readonly string[];
  /**
   * How long shutdown waits for in-flight reconciles, in milliseconds.
   * @default 30_000
   */
  shutdownTimeoutMs?: number;
  /**
   * Resolves when this replica may run controllers (e.g. after acquiring a Lease); the
   * informers run and fill their caches meanwhile. Should reject with the signal's reason
   * when the signal aborts.
   * @default start at once
   */
  leaderElection?: (ctx: LeaderElectionContext) => Promise<void>;
  /**
   * Share the objects with the operator's other replicas instead of electing a leader: each
   * replica caches and reconciles the shards it holds (see `ShardCoordinator`). Not with
   * `leaderElection`.
   * @default no sharding
   */
  sharding?: ManagerSharding;
  /** Metrics hooks: reconciles, active workers and work queues per controller. */
  metrics?: ControllerMetricsHooks;
  /**
   * Makes the work queue rate limiter of each controller.
   * @default defaultControllerRateLimiter() per controller
   */
  rateLimiter?: (controller: string) => RateLimiter<string>;
  /**
   * Options shared by the informers (resync, stall timeout, backoff, transform).
   * @default {}
   */
  informerOptions?: Omit<InformerFactoryOptions, "client">;
  /**
   * Stop on SIGINT and SIGTERM, as if the signal had aborted.
   * @default false
   */
  handleSignals?: boolean;
}

/** The manager's `sharding` option: the coordinator's options but its client and drain. */
export type ManagerSharding = Omit<ShardCoordinatorOptions, "client" | "drain">;

/** One controller's work in one shard this replica owns, for per-shard metrics. */
export interface ShardStat {
  /** The controller. */
  controller: string;
  /** The shard index. */
  shard: number;
  /** Primaries of the shard in the controller's cache. */
  objects: number;
  /** Their keys waiting in the controller's work queue. */
  queued: number;
}

/** One informer's health, as the manager reports it. */
export interface InformerStatus {
  /** `group/version, Kind=...` and namespace of the informer. */
  name: string;
  /** Its health. */
  health: InformerHealth;
}

/** What {@linkcode Manager.prototype.health} reports. */
export interface ManagerHealth {
  /** Started and every cache synced: ready for traffic. */
  ready: boolean;
  /** No informer failing (stalled, forbidden, unreachable) after it synced. */
  healthy: boolean;
  /** This replica runs its controllers (leadership acquired, if required). */
  leading: boolean;
  /** Per-informer detail. */
  informers: InformerStatus[];
}

/**
 * Runs controllers. Create it with {@linkcode createManager}.
 *
 * @example Running until SIGTERM
 * ```ts ignore — runs controllers against a live API server until SIGTERM
 * import { createManager } from "./manager.ts";
 * import { reconcile } from "../controller/reconcile.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 *
 * const controller = reconcile(ConfigMap, { reconcile: (cm, ctx) => ctx.log.info("Saw {key}", { key: ctx.key }) });
 * const stop = new AbortController();
 * Deno.addSignalListener("SIGTERM", () => stop.abort());
 * await createManager({ controllers: [controller] }).start(stop.signal);
 * ```
 */
export class Manager implements AsyncDisposable {
  /** The controllers run. */
  readonly controllers: readonly Controller<any>[];
  readonly #opts: ManagerOptions;
  readonly #stop = new AbortController();
  #runtimes: ControllerRuntime<any>[] = [];
  #informers: InformerFactory | undefined;
  #client: Client | undefined;
  #sharding: ShardCoordinator | undefined;
  #shardStop = new AbortController();
  #shardRun: Promise<ShardingEnd> | undefined;
  #started = false;
  #leading = false;
  #done: Promise<void> | undefined;

  /**
   * Prefer {@linkcode createManager}.
   *
   * @param options Controllers, client, namespaces, shutdown timeout and hooks.
   */
  constructor(options: ManagerOptions) {
    this.#opts = options;
    this.controllers = Object.freeze([...options.controllers]);
  }

  /**
   * The client, once `start()` created or received it.
   *
   * @returns The client, or `undefined` before start.
   */
  get client(): Client | undefined {
    return this.#client;
  }

  /**
   * The shared informer factory, once started; controllers' informers come from it.
   *
   * @returns The factory, or `undefined` before start.
   */
  get informers(): InformerFactory | undefined {
    return this.#informers;
  }

  /**
   * The shard coordinator, once started with `sharding`.
   *
   * @returns The coordinator, or `undefined`.
   */
  get sharding(): ShardCoordinator | undefined {
    return this.#sharding;
  }

  /**
   * The shard of a controller's primary, when the manager is sharded and caches it.
   *
   * @param controller The controller's name.
   * @param key The primary's key.
   * @returns The shard index, or `undefined`.
   */
  shardOf(controller: string, key: string): number | undefined {
    const sharding = this.#sharding;
    const r = this.#runtimes.find((r) => r.controller.name === controller);
    if (!sharding || !r) return undefined;
    const { namespace, name } = parseObjectKey(key);
    try {
      const obj = r.cache.get(r.controller.resource, name, { namespace });
      return obj ? sharding.shardOf(obj) : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Per controller and shard: the primaries cached and their keys queued.
   *
   * @returns One entry per controller and shard owned, and per shard not owned that still
   * has objects in the cache (none once a hand-off completed); none when not sharded.
   */
  shardStats(): ShardStat[] {
    const sharding = this.#sharding;
    if (!sharding) return [];
    const out: ShardStat[] = [];
    for (const r of this.#runtimes) {
      const name = r.controller.name;
      const per = new Map<number, ShardStat>(
        sharding.owned.map((shard) => [shard, { controller: name, shard, objects: 0, queued: 0 }]),
      );
      for (const obj of r.cache.list(r.controller.resource)) {
        const shard = sharding.shardOf(obj);
        let s = per.get(shard);
        if (!s) per.set(shard, s = { controller: name, shard, objects: 0, queued: 0 });
        s.objects++;
      }
      for (const key of r.queue.waiting()) {
        const shard = this.shardOf(name, key);
        const s = shard === undefined ? undefined : per.get(shard);
        if (s) s.queued++;
      }
      out.push(...per.values());
    }
    return out;
  }

  /**
   * The running controllers, once started (e.g. for per-shard metrics).
   *
   * @returns One runtime per controller.
   */
  get runtimes(): readonly ControllerRuntime<any>[] {
    return this.#runtimes;
  }

  /**
   * Runs the controllers until `signal` aborts, then shuts down gracefully.
   *
   * @param signal Aborting it starts the shutdown.
   * @returns A promise that resolves once shutdown is complete.
   * @throws {TypeError} When called twice, or two controllers share a name.
   * @throws {Error} When leadership was lost (after shutting down), or the client cannot be
   * created.
   */
  start(signal?: AbortSignal): Promise<void> {
    if (this.#started) {
      return Promise.reject(new TypeError("Cannot start the manager: already started"));
    }
    this.#started = true;
    const names = new Set<string>();
    for (const c of this.controllers) {
      if (names.has(c.name)) {
        return Promise.reject(
          new TypeError(`Cannot start the manager: two controllers are named "${c.name}"`),
        );
      }
      names.add(c.name);
    }
    const sharding = this.#opts.sharding;
    if (sharding && this.#opts.leaderElection) {
      return Promise.reject(
        new TypeError("Cannot start the manager: use sharding or leaderElection, not both"),
      );
    }
    const unsplittable = sharding?.key === "namespace" &&
      this.controllers.find((c) => !c.resource.namespaced);
    if (unsplittable) {
      return Promise.reject(
        new TypeError(
          `Cannot shard controller "${unsplittable.name}" by namespace: ${unsplittable.resource.kind} is cluster-scoped; shard by "uid"`,
        ),
      );
    }
    this.#done = this.#run(signal);
    return this.#done;
  }

  /**
   * Starts the shutdown, as if the start signal had aborted.
   *
   * @returns A promise that resolves once shutdown is complete.
   */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done?.catch(() => {});
  }

  /**
   * Same as {@linkcode Manager.prototype.stop}, for `await using`.
   *
   * @returns A promise that resolves once stopped.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /**
   * Readiness: started, and every controller's caches have synced.
   *
   * @returns `true` when ready.
   */
  ready(): boolean {
    return this.#runtimes.length === this.controllers.length && this.#informers !== undefined &&
      !this.#stop.signal.aborted && this.#runtimes.every((r) => r.synced);
  }

  /**
   * Liveness: no informer is failing (a stalled or broken watch) once it has synced.
   * Informers still starting up count as healthy, so a slow first list does not kill the pod.
   *
   * @returns `true` when healthy.
   */
  healthy(): boolean {
    return this.#allInformers().every((inf) => !inf.hasSynced || inf.error === undefined);
  }

  /**
   * Readiness, liveness, leadership and per-informer detail.
   *
   * @returns The report.
   */
  health(): ManagerHealth {
    return {
      ready: this.ready(),
      healthy: this.healthy(),
      leading: this.#leading,
      informers: this.#allInformers().map((inf) => ({
        name: inf.resource.apiVersion + ", Kind=" + inf.resource.kind,
        health: inf.health(),
      })),
    };
  }

  #allInformers(): Informer<any>[] {
    return [...new Set(this.#runtimes.flatMap((r) => [...r.informers]))];
  }

  async #run(signal?: AbortSignal): Promise<void> {
    const stop = this.#stop;
    const onAbort = () => stop.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) stop.abort(signal.reason);
    const onSignal = () => {
      log.info("Received a termination signal; shutting down");
      stop.abort();
    };
    const sigs: Deno.Signal[] = this.#opts.handleSignals ? ["SIGINT", "SIGTERM"] : [];
    for (const s of sigs) Deno.addSignalListener(s, onSignal);
    let lost: { reason: unknown } | undefined;
    const ownClient = !this.#opts.client;
    try {
      this.#client = this.#opts.client ?? await createClient(this.#opts.clientOptions);
      const client = this.#client;
      this.#informers = new InformerFactory({ ...this.#opts.informerOptions, client });
      const sharding = this.#opts.sharding
        ? new ShardCoordinator({
          ...this.#opts.sharding,
          client,
          drain: async (inShards) => {
            await Promise.all(this.#runtimes.map((r) => r.idle(inShards)));
          },
        })
        : undefined;
      this.#sharding = sharding;
      this.#runtimes = this.controllers.map((c) =>
        new ControllerRuntime(c, {
          client,
          informers: this.#informers!,
          namespaces: this.#opts.namespaces,
          metrics: this.#opts.metrics,
          rateLimiter: this.#opts.rateLimiter?.(c.name),
          ...(sharding
            ? { shard: { filter: sharding.filter, owned: sharding.key === "namespace" } }
            : {}),
        })
      );
      if (stop.signal.aborted) return;
      this.#informers.start();
      log.info("Manager started {count} controllers' informers", { count: this.#runtimes.length });
      if (sharding) {
        this.#shardRun = sharding.run(this.#shardStop.signal);
        this.#shardRun.then((end) => {
          if (end !== "lost") return;
          lost ??= { reason: new Error("Sharding membership was lost") };
          stop.abort(lost.reason);
        }, () => {});
      }
      if (this.#opts.leaderElection) {
        const campaign = this.#opts.leaderElection({
          client,
          signal: stop.signal,
          lost: (reason) => {
            lost ??= { reason };
            stop.abort(reason);
          },
        });
        // A hook that ignores the signal must not hold up shutdown.
        const aborted = new Promise<void>((resolve) => {
          if (stop.signal.aborted) return resolve();
          stop.signal.addEventListener("abort", () => resolve(), { once: true });
        });
        await Promise.race([campaign, aborted]).catch((err) => {
          if (!stop.signal.aborted) throw err;
        });
        campaign.catch(() => {});
        if (stop.signal.aborted) return;
        log.info("Leadership acquired");
      }
      this.#leading = true;
      await Promise.all(this.#runtimes.map((r) =>
        r.start(stop.signal).catch((err) => {
          if (!stop.signal.aborted) throw err;
        })
      ));
      await new Promise<void>((resolve) => {
        if (stop.signal.aborted) return resolve();
        stop.signal.addEventListener("abort", () => resolve(), { once: true });
      });
    } finally {
      signal?.removeEventListener("abort", onAbort);
      stop.abort();
      await this.#shutdown(ownClient);
      for (const s of sigs) Deno.removeSignalListener(s, onSignal);
      this.#leading = false;
    }
    if (lost) {
      const what = this.#sharding ? "sharding membership" : "leadership";
      throw new Error(`Manager stopped: ${what} was lost`, { cause: lost.reason });
    }
  }

  async #shutdown(ownClient: boolean): Promise<void> {
    const timeoutMs = this.#opts.shutdownTimeoutMs ?? 30_000;
    log.info("Manager shutting down; waiting up to {timeoutMs} ms for reconciles", { timeoutMs });
    const results = await Promise.all(this.#runtimes.map((r) => r.stop(timeoutMs)));
    // Only now, with the reconciles drained, may other replicas take this one's shards.
    this.#shardStop.abort();
    await this.#shardRun?.catch(() => {});
    await this.#informers?.stop();
    if (ownClient) this.#client?.close();
    log.info("Manager stopped{late}", {
      late: results.every(Boolean) ? "" : " (some reconciles did not finish in time)",
    });
  }
}

/**
 * Creates a manager for `controllers`. Nothing runs until
 * {@linkcode Manager.prototype.start}.
 *
 * @param options Controllers, client, namespaces, shutdown timeout, leader election and
 * metrics hooks.
 * @returns The manager.
 * @throws {RangeError} When `shutdownTimeoutMs` is negative or not a number.
 *
 * @example Creating a manager
 * ```ts
 * import { createManager } from "./manager.ts";
 * import { reconcile } from "../controller/reconcile.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 * const manager = createManager({
 *   controllers: [reconcile(ConfigMap, { reconcile() {} })],
 *   namespaces: ["default"],
 *   shutdownTimeoutMs: 10_000,
 * });
 * if (manager.ready() || manager.controllers.length !== 1) throw new Error();
 * ```
 */
export function createManager(options: ManagerOptions): Manager {
  const t = options.shutdownTimeoutMs;
  if (t !== undefined && !(t >= 0)) {
    throw new RangeError(`Cannot create manager: shutdownTimeoutMs must be >= 0, got "${t}"`);
  }
  return new Manager(options);
}
