/**
 * `createManager()`: runs controllers on one client and one set of shared informers, with
 * readiness and health for probes, leader election or sharding, and a graceful shutdown.
 * Everything it runs is a {@linkcode Runnable} in a group; it owns their start and stop
 * order and their errors. The operator's `run` is flags → these options → `start(signal)`.
 *
 * ## Flow
 *
 * `start(signal)`: create the client (unless given), build what runs on it — one
 * {@linkcode ClusterScope} (the shared `InformerFactory` and one `ControllerRuntime` per
 * controller, queues filling from the start) or, with `fleet`, the hub side of the member
 * clusters, whose provider adds a scope per member at run time and removes it on disengage —
 * and the built-in runnables, then
 *
 * 1. run the `startup` hook (e.g. wait until the API server serves every kind; it may start
 *    the `server` group early);
 * 2. start the groups in order: `server` (probes, metrics), `webhook`, `cache` (the
 *    informers), `always` (leader election, the shard coordinator, deadlines);
 * 3. once elected (at once without `leaderElection`; with `sharding` every replica runs on
 *    the shards it holds), start the `leader` group: each controller starts its workers once
 *    its caches synced.
 *
 * When `signal` aborts, `stop()` is called or a runnable fails: stop the groups in reverse
 * order — the controllers first (up to `shutdownTimeoutMs` for in-flight reconciles), then
 * leader election and sharding (the Lease and the shards are given up only after the drain),
 * the informers, the webhook and the servers — close the client the manager created, and
 * resolve, or reject with the failure. Losing the Lease or sharding membership stops without
 * waiting for reconciles (another replica may be writing) and rejects with
 * {@linkcode LeadershipLostError}.
 *
 * ## Guarantees
 *
 * - Every controller reads from the same informers; a kind+namespace is watched once (per
 *   member cluster with `fleet`).
 * - One lifecycle for one cluster or many: a member's informers and controllers are runnables
 *   of the same groups, and a member's failure goes to the fleet, never stopping the manager.
 * - No reconcile starts before its caches synced, before leadership, or after shutdown began.
 * - Every runnable added is stopped, in reverse group order, also when its group never
 *   started; the first failure is the one `start()` rejects with.
 * - `start()` resolves only after shutdown completed; it installs signal handlers only with
 *   `handleSignals: true`, and never exits the process.
 *
 * @module
 */
import { getLogger } from "../../util/log.ts";
import { type Client, type ClientOptions, createClient } from "../../client/client.ts";
import type { ControllerMetricsHooks } from "../controller/metrics_hooks.ts";
import type { ControllerRuntime } from "../controller/pipeline/runner.ts";
import type { Informer, InformerHealth } from "../cache/informer.ts";
import type { InformerFactory, InformerFactoryOptions } from "../cache/informer_factory.ts";
import { ClusterScope } from "./cluster_scope.ts";
import type { MemberClusters, MemberHost } from "./members.ts";
import type { RateLimiter } from "../queue/rate_limiter.ts";
import type { Controller } from "../controller/reconcile.ts";
import { parseObjectKey } from "../../core/object_key.ts";
import { type LeaderElector, leaderElector, type LeaderElectorOptions } from "./leader_election.ts";
import { Lifecycle } from "./_lifecycle.ts";
import type { Runnable } from "./runnable.ts";
import { ShardCoordinator, type ShardCoordinatorOptions } from "../sharding/coordinator.ts";
import { KubenoError } from "../../util/error.ts";

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
  leaderElection?: ((ctx: LeaderElectionContext) => Promise<void>) | ManagerLeaderElection;
  /**
   * More runnables (servers, periodic tasks...), started and stopped with the built-in ones
   * in the order of their groups (see {@linkcode Runnable}).
   * @default []
   */
  runnables?: readonly Runnable[];
  /**
   * Runs first, before any group starts, e.g. to wait until the API server serves every
   * kind; a rejection ends `start()` with it. `serve()` starts the `server` group early
   * (probes while waiting). Should reject with the signal's reason when the signal aborts.
   * @default nothing to wait for
   */
  startup?: (ctx: ManagerStartupContext) => Promise<void>;
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
   * Serve real changes before the keys of a start-up storm (the initial lists, resyncs,
   * `requeue(ms)`), as controller-runtime's priority queue; `false`: one FIFO per controller.
   * @default true
   */
  priorityQueue?: boolean;
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
  /**
   * Run the controllers on member clusters instead of this manager's own: `createFleet({
   * clusters })` engages and disengages them at run time, and each engaged member's
   * informers and controllers run in this manager's groups (the informers on every replica,
   * the controllers once this replica leads; with `sharding`, each member on one replica).
   * The manager's client is then the hub.
   * @default the controllers run on the manager's client
   */
  fleet?: MemberClusters;
}

/** What the manager's `startup` hook gets. */
export interface ManagerStartupContext {
  /** The manager's client. */
  client: Client;
  /** Aborted when the manager stops. */
  signal: AbortSignal;
  /** Starts the `server` group now instead of after the hook. */
  serve(): Promise<void>;
}

/**
 * The manager's `leaderElection` option as a Lease to hold: the elector's options but its
 * client. Losing the Lease stops the manager at once (in-flight reconciles are abandoned,
 * another replica may already be writing) and `start()` rejects with a
 * {@linkcode LeadershipLostError}.
 */
export type ManagerLeaderElection = Omit<LeaderElectorOptions, "client">;

/**
 * The manager's `sharding` option: the coordinator's options but its client and drain.
 *
 * @experimental **UNSTABLE**: rests on the alpha ShardedListAndWatch feature (KEP-5866).
 */
export type ManagerSharding = Omit<ShardCoordinatorOptions, "client" | "drain">;

/**
 * One controller's work in one shard this replica owns, for per-shard metrics.
 *
 * @experimental **UNSTABLE**: rests on the alpha ShardedListAndWatch feature (KEP-5866).
 */
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
  /** Optional kinds a controller runs without, because the API server does not serve them. */
  missingKinds: MissingKind[];
}

/** An optional kind a controller runs without, in {@linkcode ManagerHealth}. */
export interface MissingKind {
  /** The controller. */
  controller: string;
  /** `Kind (group/version)`, e.g. `Certificate (cert-manager.io/v1)`. */
  kind: string;
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
  /** The manager's own cluster: its informers and controllers (none with `fleet`). */
  #scope: ClusterScope | undefined;
  #built = false;
  #client: Client | undefined;
  #sharding: ShardCoordinator | undefined;
  #elector: LeaderElector | undefined;
  readonly #lifecycle = new Lifecycle(this.#stop);
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
    return this.#scope?.informers;
  }

  /**
   * The informers whose sync makes the manager ready: its controllers' or, with `fleet`, the
   * hub's (each member's show in the fleet's own readiness detail).
   *
   * @returns The informers, or `undefined` before start.
   */
  caches(): Informer<any>[] | undefined {
    if (!this.#built) return undefined;
    return this.#opts.fleet?.hubInformers() ?? this.#scope?.allInformers() ?? [];
  }

  /**
   * The leader elector, once started with a Lease as `leaderElection`.
   *
   * @returns The elector, or `undefined`.
   */
  get elector(): LeaderElector | undefined {
    return this.#elector;
  }

  /**
   * Adds a runnable. Before `start()` it starts with its group; while its group runs it
   * starts at once.
   *
   * @param runnable What to run.
   * @returns A promise that resolves once it started (at once before `start()`).
   * @throws {TypeError} When the manager is stopping.
   */
  add(runnable: Runnable): Promise<void> {
    return this.#lifecycle.add(runnable);
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
    const r = this.runtimes.find((r) => r.controller.name === controller);
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
    for (const r of this.runtimes) {
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
    return this.#scope?.runtimes ?? [];
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
    const unsplittable = sharding?.key === "namespace" && !this.#opts.fleet &&
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
   * Whether the stop began (the start signal aborted, `stop()`, or a runnable failed).
   *
   * @returns `true` once stopping.
   */
  get stopping(): boolean {
    return this.#stop.signal.aborted;
  }

  /**
   * Readiness: started, and every controller's caches have synced.
   *
   * @returns `true` when ready.
   */
  ready(): boolean {
    if (!this.#built || this.#stop.signal.aborted) return false;
    return this.#opts.fleet?.ready() ?? this.#scope?.synced() ?? false;
  }

  /**
   * Liveness: no informer is failing (a stalled or broken watch) once it has synced.
   * Informers still starting up count as healthy, so a slow first list does not kill the pod.
   *
   * @returns `true` when healthy.
   */
  healthy(): boolean {
    return (this.caches() ?? []).every((inf) => !inf.hasSynced || inf.error === undefined);
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
      informers: (this.caches() ?? []).map((inf) => ({
        name: inf.resource.apiVersion + ", Kind=" + inf.resource.kind,
        health: inf.health(),
      })),
      missingKinds: this.missingKinds(),
    };
  }

  /**
   * Reconciles every cached primary of a controller (or of every controller) on demand, as
   * kube-rs's `reconcile_all_on`; the keys wait behind real changes. A standby replica queues
   * them too, reconciled once it leads.
   *
   * @param controller The controller's name.
   * @default controller every controller
   * @returns How many keys were queued.
   * @throws {TypeError} When no controller has that name.
   */
  reconcileAll(controller?: string): number {
    if (controller !== undefined && !this.controllers.some((c) => c.name === controller)) {
      throw new TypeError(`Cannot reconcile all of controller "${controller}": no such controller`);
    }
    return this.#opts.fleet?.reconcileAll(controller) ?? this.#scope?.reconcileAll(controller) ?? 0;
  }

  /**
   * The optional kinds (in `owns`, `watches` or `reads`, not built in, not `required`) that
   * controllers run without now, because the API server does not serve them. Each is cached
   * within seconds of its CustomResourceDefinition being established, and dropped again when
   * the CRD is deleted.
   *
   * @returns One entry per controller and kind; empty before start.
   */
  missingKinds(): MissingKind[] {
    return this.runtimes.flatMap((r) =>
      r.missingKinds.map((res) => ({
        controller: r.controller.name,
        kind: `${res.kind} (${res.apiVersion})`,
      }))
    );
  }

  async #run(signal?: AbortSignal): Promise<void> {
    const stop = this.#stop;
    const lc = this.#lifecycle;
    const onAbort = () => stop.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) stop.abort(signal.reason);
    const onSignal = () => {
      log.info("Received a termination signal; shutting down");
      stop.abort();
    };
    const sigs: Deno.Signal[] = this.#opts.handleSignals ? ["SIGINT", "SIGTERM"] : [];
    for (const s of sigs) Deno.addSignalListener(s, onSignal);
    const ownClient = !this.#opts.client;
    try {
      this.#client = this.#opts.client ?? await createClient(this.#opts.clientOptions);
      await this.#runGroups(this.#client);
    } catch (err) {
      if (!stop.signal.aborted) lc.fail(err);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      stop.abort();
      // A start-up that failed before the caches ran (a kind not installed, a port taken)
      // stops silently: its one line is the caller's to print.
      const ran = lc.hasStarted("cache");
      const urgent = lc.failure?.urgent ?? false;
      const timeoutMs = urgent ? 0 : this.#opts.shutdownTimeoutMs ?? 30_000;
      if (ran) {
        log.info("Manager shutting down; waiting up to {timeoutMs} ms for reconciles", {
          timeoutMs,
        });
      }
      await lc.stopAll((group) => {
        // Said before the Lease is released (the next group), which it explains.
        if (group === "leader" && this.#scope?.late) {
          log.warn("Controllers stopped; some reconciles did not finish in time");
        }
      });
      if (ownClient) this.#client?.close();
      if (ran) {
        log.info("Manager stopped{late}", {
          late: this.#scope?.late ? " (some reconciles did not finish in time)" : "",
        });
      }
      for (const s of sigs) Deno.removeSignalListener(s, onSignal);
      this.#leading = false;
    }
    if (lc.failure) throw lc.failure.error;
  }

  /** Builds what runs, then starts the groups in order until the stop. */
  async #runGroups(client: Client): Promise<void> {
    const stop = this.#stop;
    const lc = this.#lifecycle;
    const elected = this.#build(client);
    for (const r of this.#opts.runnables ?? []) await lc.add(r);
    if (stop.signal.aborted) return;
    await this.#opts.startup?.({
      client,
      signal: stop.signal,
      serve: () => lc.startGroup("server", client),
    });
    for (const group of ["server", "webhook", "cache", "always"] as const) {
      if (stop.signal.aborted) return;
      await lc.startGroup(group, client);
    }
    if (stop.signal.aborted) return;
    log.info("Manager started {count} controllers' informers", { count: this.controllers.length });
    if (elected) await untilAborted(elected, stop.signal);
    if (stop.signal.aborted) return;
    if (this.#opts.leaderElection) log.info("Leadership acquired");
    this.#leading = true;
    await lc.startGroup("leader", client);
    await untilAborted(undefined, stop.signal);
  }

  /**
   * Builds what runs on `client` — the manager's own cluster scope or, with `fleet`, the
   * hub side of the member clusters — the shard coordinator and leader election; returns
   * what resolves once this replica may run the `leader` group.
   */
  #build(client: Client): Promise<void> | undefined {
    const lc = this.#lifecycle;
    const fleet = this.#opts.fleet;
    const sharding = this.#opts.sharding
      ? new ShardCoordinator({
        ...this.#opts.sharding,
        client,
        // A fleet spreads its members (one named shard each), a cluster its objects.
        ...(fleet ? { key: "uid" as const, ...fleet.shards() } : {
          drain: async (inShards: Parameters<NonNullable<ShardCoordinatorOptions["drain"]>>[0]) => {
            await Promise.all(this.runtimes.map((r) => r.idle(inShards)));
          },
        }),
        onLost: (reason) => {
          this.#opts.sharding?.onLost?.(reason);
          lc.fail(new LeadershipLostError(`Lost sharding membership: ${reason}`), {
            urgent: true,
          });
        },
      })
      : undefined;
    this.#sharding = sharding;
    if (fleet) {
      for (const r of fleet.attach(this.#host(client, sharding))) void lc.add(r);
    } else {
      const scope = new ClusterScope({
        ...this.#scopeOptions(),
        client,
        metrics: this.#opts.metrics,
        shutdownTimeoutMs: this.#opts.shutdownTimeoutMs ?? 30_000,
        ...(sharding
          ? { shard: { filter: sharding.filter, owned: sharding.key === "namespace" } }
          : {}),
      });
      this.#scope = scope;
      for (const r of scope.runnables) void lc.add(r);
    }
    this.#built = true;
    if (sharding) void lc.add(untilStopped("shard coordinator", (s) => sharding.run(s)));
    const election = this.#election(client);
    if (election) void lc.add(election.runnable);
    return election?.elected;
  }

  /** What every cluster scope of this manager shares. */
  #scopeOptions() {
    const o = this.#opts;
    return {
      controllers: this.controllers,
      namespaces: o.namespaces,
      rateLimiter: o.rateLimiter,
      priorityQueue: o.priorityQueue,
      informerOptions: o.informerOptions,
    };
  }

  /** What the member clusters get: scopes of this manager's controllers, run in its groups. */
  #host(hub: Client, sharding: ShardCoordinator | undefined): MemberHost {
    const lc = this.#lifecycle;
    return {
      hub,
      signal: this.#stop.signal,
      sharding,
      scope: (cluster, client, options) =>
        new ClusterScope({ ...this.#scopeOptions(), ...options, cluster, client }),
      engage: async (scope) => {
        for (const r of scope.runnables) {
          // A controller starts with the leader group; only the informers are waited for.
          const started = lc.add(r);
          if (r.group !== "leader") await started;
        }
      },
      disengage: (scope) => lc.remove(scope.runnables),
      fail: (error) => lc.fail(error),
    };
  }

  /** Leader election as a runnable of the `always` group, from the option's two forms. */
  #election(client: Client): { runnable: Runnable; elected: Promise<void> } | undefined {
    const option = this.#opts.leaderElection;
    if (!option) return undefined;
    const lc = this.#lifecycle;
    if (typeof option === "function") {
      let begin!: () => void;
      const elected = new Promise<void>((resolve, reject) => {
        begin = () => {
          const run = option({
            client,
            signal: this.#stop.signal,
            lost: (reason) => {
              lc.fail(new Error("Manager stopped: leadership was lost", { cause: reason }));
            },
          });
          run.then(resolve, reject);
        };
      });
      elected.catch(() => {});
      const runnable: Runnable = {
        name: "leader election",
        group: "always",
        start: () => begin(),
        stop: () => {},
      };
      return { elected, runnable };
    }
    const elector = leaderElector({
      ...option,
      client,
      onStoppedLeading: (reason) => {
        option.onStoppedLeading?.(reason);
        if (reason !== "lost") return;
        // No fencing: another replica may hold the Lease already. Stop writing now, not after
        // in-flight reconciles finish.
        const lease = `${elector.namespace}/${elector.name}`;
        log.error("Lost the Lease {lease}; stopping without waiting for reconciles", { lease });
        lc.fail(new LeadershipLostError(`Lost the Lease "${lease}"`), { urgent: true });
      },
    });
    this.#elector = elector;
    return {
      elected: elector.elected,
      // Stopped after the controllers drained (they stop first): a standby never writes while
      // this replica still does.
      runnable: untilStopped("leader election", (signal) => elector.run(signal)),
    };
  }
}

/** Leadership (the Lease, or sharding membership) was lost: the manager stopped at once. */
export class LeadershipLostError extends KubenoError {
  /**
   * Creates the error.
   *
   * @param message What was lost, e.g. `Lost the Lease "default/myapp-operator"`.
   * @param options `cause`: why.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "LeadershipLostError";
  }
}

/**
 * An `always` runnable that runs `run` until its stop aborts the signal, and waits for it to
 * end: leader election (which then releases the Lease) and the shard coordinator (which then
 * hands its shards off) — both only after the controllers drained.
 */
function untilStopped(name: string, run: (signal: AbortSignal) => Promise<unknown>): Runnable {
  const stop = new AbortController();
  let running: Promise<unknown> | undefined;
  return {
    name,
    group: "always",
    start: () => void (running = run(stop.signal)),
    stop: async () => {
      stop.abort();
      await running?.catch(() => {});
    },
  };
}

/**
 * Resolves when `promise` does or `signal` aborts, whichever is first (never before the abort
 * without a promise); rethrows only before the abort.
 */
async function untilAborted(promise: Promise<void> | undefined, signal: AbortSignal) {
  const aborted = new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
  // A hook that ignores the signal must not hold up shutdown.
  await Promise.race(promise ? [promise, aborted] : [aborted]).catch((err) => {
    if (!signal.aborted) throw err;
  });
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
