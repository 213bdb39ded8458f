/**
 * `createFleet()`: the same controllers over a changing set of clusters. A
 * {@linkcode ClusterProvider} engages and disengages clusters at run time; for each engaged
 * cluster the fleet runs one single-cluster {@linkcode Manager} of its own — its client, its
 * informers, its controllers' queues and workers — so `ctx.client`, `ctx.cache` and
 * `ctx.events` are that cluster's, `ctx.cluster` names it and `hubOf(ctx)` reads the hub.
 * (multicluster-runtime's `mcmanager` with `Engage(ctx, name, cluster)`.)
 *
 * ## Flow
 *
 * `start(signal)`: start the hub's informers for `hubReads`, then run the provider. On
 * `engage(name, config)`: build the cluster's client (a kubeconfig from a Secret is written
 * to a private temp file for as long as it takes to read it), then start its manager in the
 * background. On `disengage(name)`: stop that manager — its controllers first (in-flight
 * reconciles get `disengageTimeoutMs`, then their `ctx.signal` aborts), then its informers,
 * which closes its watches — close its client and forget it. A change of a `hubReads` object
 * queues every primary of every cluster (its reconciles read the hub).
 *
 * ## Guarantees
 *
 * - Clusters are independent: one that is slow, unreachable or failing delays no other's
 *   engage, sync or reconciles; its state shows in {@linkcode Fleet.prototype.clusters}.
 * - Engage and disengage of one name are applied in order; engaging a name again with the
 *   same config changes nothing, with another config replaces its manager.
 * - `start()` resolves only after every cluster was disengaged and the provider stopped.
 *
 * ## Caveats
 *
 * - Without `unreachableAfterMs` a cluster stays engaged while unreachable (its informers
 *   retry with backoff) until its provider disengages it.
 *
 * @module
 */
import { getLogger } from "../../util/log.ts";
import { firstLine } from "../../util/cli_io.ts";
import { type Client, type ClientOptions, createClient } from "../../client/client.ts";
import type { Resource } from "../../core/resource.ts";
import type { Controller } from "../controller/reconcile.ts";
import type { ControllerMetricsHooks } from "../controller/metrics_hooks.ts";
import { InformerFactory } from "../cache/informer_factory.ts";
import { InformerReader } from "../cache/reader.ts";
import type { Informer } from "../cache/informer.ts";
import { createManager, type Manager, type ManagerOptions } from "../manager/manager.ts";
import type { ClusterConfig, ClusterProvider } from "./provider.ts";
import { type HubAccess, registerHub } from "./hub.ts";
import { ShardCoordinator, type ShardCoordinatorOptions } from "../sharding/coordinator.ts";
import { HealthCheckError } from "../manager/health.ts";

const log = getLogger(["kubeno", "cluster"]);

/** Options of {@linkcode createFleet}. */
export interface FleetOptions {
  /** The controllers to run on every engaged cluster, from `reconcile()`. */
  controllers: readonly Controller<any>[];
  /** Discovers the clusters, e.g. `kubeconfigSecrets({ namespace })` or `fixedClusters([...])`. */
  clusters: ClusterProvider;
  /**
   * The hub's client: where the provider looks for clusters and `hubReads` are cached.
   * @default none (a provider that needs a hub fails)
   */
  hub?: Client;
  /**
   * Kinds of the hub that reconciles read through `hubOf(ctx)?.cache` (e.g. the operator's
   * configuration); a change of one queues every primary on every cluster.
   * @default []
   */
  hubReads?: readonly Resource<any>[];
  /**
   * The hub namespace `hubReads` are cached in.
   * @default all namespaces
   */
  hubNamespace?: string;
  /**
   * Whether this replica takes a cluster; the others are left to other replicas.
   * Re-asked on {@linkcode Fleet.prototype.reconsider}. Not with `sharding`.
   * @default every cluster (or, with `sharding`, those in the shards this replica holds)
   */
  owns?: (cluster: string) => boolean;
  /**
   * Spread the clusters over the operator's replicas through the hub's Leases, with the
   * shard coordinator in its `named` mode: one shard (and Lease) per known cluster name, so
   * each of r replicas engages ⌊n/r⌋ or ⌈n/r⌉ of the n clusters, keeps them while it lives,
   * and disengages one (drained) before its Lease is given up to another replica.
   * @default every replica engages every cluster
   */
  sharding?: FleetSharding;
  /**
   * How long a disengaged cluster's in-flight reconciles may go on before their signal
   * aborts, in milliseconds.
   * @default 5_000
   */
  disengageTimeoutMs?: number;
  /**
   * Disengage a cluster whose caches have not synced, or whose informers have been failing,
   * for this long (an unreachable API server, revoked credentials); it is engaged again
   * after as long, for as long as its provider still names it. Keeps an unreachable cluster's
   * retries from costing memory and connections forever.
   * @default never: an unreachable cluster stays engaged, its informers retrying
   */
  unreachableAfterMs?: number;
  /**
   * Metrics hooks per cluster, e.g. `clusterMetrics(registry)` for series with a `cluster`
   * label.
   * @default none
   */
  metrics?: (cluster: string) => ControllerMetricsHooks | undefined;
  /**
   * Options of every cluster's client (field manager, timeouts, `onRequest`).
   * @default {}
   */
  clientOptions?: Omit<ClientOptions, "kubeconfig" | "context">;
  /**
   * More options of each cluster's manager (namespaces, priority queue, informer options).
   * @default {}
   */
  manager?: Pick<
    ManagerOptions,
    "namespaces" | "priorityQueue" | "informerOptions" | "rateLimiter"
  >;
  /** Called when a cluster was engaged (its manager started) or disengaged (stopped). */
  onCluster?: (event: { type: "engaged" | "disengaged"; cluster: string }) => void;
}

/** The fleet's `sharding` option: the coordinator's options but its client, drain and key. */
export type FleetSharding = Omit<
  ShardCoordinatorOptions,
  "client" | "drain" | "key" | "shards" | "named"
>;

/** One engaged cluster, as {@linkcode Fleet.prototype.clusters} reports it. */
export interface ClusterStatus {
  /** Its name. */
  name: string;
  /** Its controllers' caches synced: it reconciles. */
  ready: boolean;
  /** No informer of it failing after it synced. */
  healthy: boolean;
  /** Why its client or manager failed, if it did. */
  error?: string;
}

interface Engaged {
  config: string;
  /** Since when (ms, monotonic) it has been not synced or failing. */
  unwellSince?: number;
  manager?: Manager;
  client?: Client;
  running?: Promise<void>;
  error?: string;
}

/**
 * Runs controllers over a changing set of clusters. Create it with {@linkcode createFleet}.
 */
export class Fleet implements AsyncDisposable {
  /** The controllers run on every cluster. */
  readonly controllers: readonly Controller<any>[];
  readonly #opts: FleetOptions;
  readonly #stop = new AbortController();
  readonly #clusters = new Map<string, Engaged>();
  /** Per name, the engage/disengage steps in order. */
  readonly #chains = new Map<string, Promise<void>>();
  /** The provider's view: every cluster it engaged, owned here or not. */
  readonly #known = new Map<string, ClusterConfig>();
  #hub: HubAccess | undefined;
  #hubInformers: InformerFactory | undefined;
  #sharding: ShardCoordinator | undefined;
  readonly #retries = new Set<ReturnType<typeof setTimeout>>();
  #done: Promise<void> | undefined;

  /**
   * Prefer {@linkcode createFleet}.
   *
   * @param options Controllers, provider, hub.
   */
  constructor(options: FleetOptions) {
    this.#opts = options;
    this.controllers = Object.freeze([...options.controllers]);
  }

  /**
   * Runs until `signal` aborts, then disengages every cluster.
   *
   * @param signal Aborting it stops the fleet.
   * @returns A promise that resolves once every cluster was disengaged.
   * @throws {TypeError} When called twice.
   */
  start(signal?: AbortSignal): Promise<void> {
    if (this.#done) return Promise.reject(new TypeError("Cannot start the fleet: already started"));
    const onAbort = () => this.#stop.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    this.#done = this.#run().finally(() => signal?.removeEventListener("abort", onAbort));
    return this.#done;
  }

  /**
   * Stops the fleet, as if the start signal had aborted.
   *
   * @returns A promise that resolves once stopped.
   */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done?.catch(() => {});
  }

  /**
   * Same as {@linkcode Fleet.prototype.stop}, for `await using`.
   *
   * @returns A promise that resolves once stopped.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /**
   * The engaged clusters and their state.
   *
   * @returns One entry per engaged cluster, by name.
   */
  clusters(): ClusterStatus[] {
    return [...this.#clusters].sort(([a], [b]) => a < b ? -1 : 1).map(([name, e]) => ({
      name,
      ready: e.manager?.ready() ?? false,
      healthy: e.error === undefined && (e.manager?.healthy() ?? true),
      ...(e.error ? { error: e.error } : {}),
    }));
  }

  /**
   * The manager running one cluster's controllers.
   *
   * @param cluster The cluster's name.
   * @returns Its manager, or `undefined` when not engaged (yet).
   */
  manager(cluster: string): Manager | undefined {
    return this.#clusters.get(cluster)?.manager;
  }

  /**
   * Every cluster the provider engaged, taken by this replica or not.
   *
   * @returns Their names, sorted.
   */
  known(): string[] {
    return [...this.#known.keys()].sort();
  }

  /**
   * A readiness check for `/readyz`: fails only while the hub's caches are not synced; its
   * detail says per cluster whether it is ready, so one unreachable cluster shows without
   * taking the replica out of service.
   *
   * @returns The check, for `HealthChecks.addReadyz("clusters", ...)`.
   */
  readyzCheck(): () => string {
    return () => {
      const hub = this.#hubInformers;
      if (hub && ![...hub.all()].every((i: Informer<any>) => i.hasSynced)) {
        throw new HealthCheckError("Hub caches not synced");
      }
      const parts = this.clusters().map((c) =>
        `${c.name}: ${
          c.error
            ? `failed (${c.error})`
            : !c.ready
            ? "not synced"
            : c.healthy
            ? "ready"
            : "unhealthy"
        }`
      );
      return parts.join("; ") || "no clusters engaged";
    };
  }

  /**
   * Asks `owns` again for every known cluster: engages those now taken, disengages those
   * given up (e.g. after the replicas' membership changed).
   *
   * @returns A promise that resolves once the changes were applied.
   */
  async reconsider(): Promise<void> {
    const steps: Promise<void>[] = [];
    for (const [name, config] of this.#known) {
      const mine = this.#owns(name);
      if (mine && !this.#clusters.has(name)) steps.push(this.#engage(name, config));
      if (!mine && this.#clusters.has(name)) steps.push(this.#disengage(name));
    }
    await Promise.all(steps);
  }

  /**
   * The shard coordinator, once started with `sharding`.
   *
   * @returns The coordinator, or `undefined`.
   */
  get sharding(): ShardCoordinator | undefined {
    return this.#sharding;
  }

  #owns(name: string): boolean {
    if (this.#sharding) return this.#sharding.filter.matches({ metadata: { name } });
    return this.#opts.owns?.(name) ?? true;
  }

  /** The coordinator over the hub's Leases; its drain disengages the clusters moving away. */
  #shard(hub: Client | undefined, options: FleetSharding): ShardCoordinator {
    if (!hub) throw new TypeError("Cannot spread clusters over replicas: the fleet has no hub");
    const coordinator = new ShardCoordinator({
      ...options,
      client: hub,
      key: "uid",
      named: { keys: () => [...this.#known.keys()] },
      drain: async (inShards) => {
        const moving = [...this.#clusters.keys()].filter((n) =>
          inShards({ metadata: { name: n } })
        );
        await Promise.all(moving.map((n) => this.#disengage(n)));
      },
      onLost: (reason) => {
        options.onLost?.(reason);
        log.error("Lost the fleet's sharding membership: {reason}; stopping", { reason });
        this.#stop.abort();
      },
    });
    coordinator.filter.subscribe(() => void this.reconsider());
    return coordinator;
  }

  async #run(): Promise<void> {
    const stop = this.#stop.signal;
    const hub = this.#opts.hub;
    if (hub) this.#hub = this.#hubAccess(hub);
    const unreachable = this.#opts.unreachableAfterMs;
    const watchdog = unreachable === undefined
      ? undefined
      : setInterval(() => this.#checkReachable(unreachable), Math.min(1_000, unreachable / 4));
    const shardStop = new AbortController();
    let sharding: Promise<unknown> | undefined;
    if (this.#opts.sharding) {
      this.#sharding = this.#shard(hub, this.#opts.sharding);
      sharding = this.#sharding.run(shardStop.signal);
    }
    try {
      await this.#opts.clusters.run({
        hub,
        signal: stop,
        engage: (name, config) => {
          if (stop.aborted) return;
          const fresh = !this.#known.has(name);
          this.#known.set(name, config);
          if (fresh) this.#sharding?.refresh();
          if (this.#owns(name)) void this.#engage(name, config);
        },
        disengage: (name) => {
          this.#known.delete(name);
          this.#sharding?.refresh();
          void this.#disengage(name);
        },
      });
    } catch (err) {
      log.error("Cluster provider {provider} failed: {error}", {
        provider: this.#opts.clusters.name,
        error: firstLine(err),
      });
      throw err;
    } finally {
      this.#stop.abort();
      clearInterval(watchdog);
      for (const t of this.#retries) clearTimeout(t);
      await Promise.all([...this.#clusters.keys()].map((name) => this.#disengage(name)));
      await Promise.all([...this.#chains.values()]);
      // Only now: the shards' Leases are given up after their clusters were disengaged.
      shardStop.abort();
      await sharding?.catch(() => {});
      await this.#hubInformers?.stop();
    }
  }

  /** Disengages the clusters unwell for longer than `limitMs`; engages them again later. */
  #checkReachable(limitMs: number): void {
    const now = performance.now();
    for (const [name, e] of this.#clusters) {
      const well = e.manager !== undefined && e.manager.ready() && e.manager.healthy();
      if (well) {
        e.unwellSince = undefined;
        continue;
      }
      e.unwellSince ??= now;
      if (now - e.unwellSince < limitMs || e.config === "") continue;
      const config = e.config;
      e.config = ""; // once
      log.warn("Cluster {cluster} unreachable for {ms} ms; disengaging it", {
        cluster: name,
        ms: Math.round(now - e.unwellSince),
      });
      void this.#serial(name, () => this.#teardown(name, e, "unreachable")).then(() => {
        const retry = setTimeout(() => {
          this.#retries.delete(retry);
          const known = this.#known.get(name);
          if (known && JSON.stringify(known) === config && this.#owns(name)) {
            void this.#engage(name, known);
          }
        }, limitMs);
        this.#retries.add(retry);
      });
    }
  }

  /** The hub's client and a cache of `hubReads`; their changes re-queue every cluster. */
  #hubAccess(client: Client): HubAccess {
    const reads = this.#opts.hubReads ?? [];
    const informers = new InformerFactory({ client });
    this.#hubInformers = informers;
    const namespace = this.#opts.hubNamespace;
    const sources = reads.map((resource) => {
      const inf = informers.for(resource, resource.namespaced && namespace ? { namespace } : {});
      inf.addHandler({
        onEvent: () => {
          for (const e of this.#clusters.values()) e.manager?.reconcileAll();
        },
      });
      return { resource, informers: [inf] };
    });
    if (reads.length) void informers.start();
    return {
      client,
      cache: new InformerReader(sources, {
        owner: "the hub",
        hint: () => "add it to the fleet's hubReads",
        defaultNamespace: namespace,
      }),
    };
  }

  /** Runs `step` after the steps queued before for `name`. */
  #serial(name: string, step: () => Promise<void>): Promise<void> {
    const next = (this.#chains.get(name) ?? Promise.resolve()).then(step).catch((err) => {
      log.error("Cannot change cluster {cluster}: {error}", {
        cluster: name,
        error: firstLine(err),
      });
    });
    this.#chains.set(name, next);
    void next.then(() => {
      if (this.#chains.get(name) === next) this.#chains.delete(name);
    });
    return next;
  }

  #engage(name: string, config: ClusterConfig): Promise<void> {
    return this.#serial(name, async () => {
      const text = JSON.stringify(config);
      const had = this.#clusters.get(name);
      if (had?.config === text || this.#stop.signal.aborted) return;
      if (had) await this.#teardown(name, had, "its access changed");
      const e: Engaged = { config: text };
      this.#clusters.set(name, e);
      try {
        e.client = await clusterClient(config, this.#opts.clientOptions);
      } catch (err) {
        e.error = firstLine(err);
        log.error("Cannot engage cluster {cluster}: {error}", { cluster: name, error: e.error });
        return;
      }
      if (this.#hub) registerHub(e.client, this.#hub);
      const manager = createManager({
        ...this.#opts.manager,
        controllers: this.controllers,
        client: e.client,
        cluster: name,
        metrics: this.#opts.metrics?.(name),
        shutdownTimeoutMs: this.#opts.disengageTimeoutMs ?? 5_000,
      });
      e.manager = manager;
      e.running = manager.start().catch((err) => {
        e.error = firstLine(err);
        log.error("Cluster {cluster} stopped: {error}", { cluster: name, error: e.error });
      });
      log.info("Engaged cluster {cluster} ({server})", {
        cluster: name,
        server: e.client.server,
      });
      this.#opts.onCluster?.({ type: "engaged", cluster: name });
    });
  }

  #disengage(name: string): Promise<void> {
    return this.#serial(name, async () => {
      const e = this.#clusters.get(name);
      if (!e) return;
      await this.#teardown(name, e, "disengaged");
    });
  }

  async #teardown(name: string, e: Engaged, why: string): Promise<void> {
    await e.manager?.stop();
    await e.running;
    e.client?.close();
    this.#clusters.delete(name);
    log.info("Disengaged cluster {cluster}: {why}", { cluster: name, why });
    this.#opts.onCluster?.({ type: "disengaged", cluster: name });
  }
}

/**
 * A cluster's client; a kubeconfig's text goes through a private temp file, then removed.
 *
 * @param config How to reach the cluster, as its provider engaged it.
 * @param options Client options (field manager, user agent...).
 * @returns The client; close it when done.
 * @throws What `createClient` throws for a kubeconfig it cannot use.
 */
export async function clusterClient(
  config: ClusterConfig,
  options: FleetOptions["clientOptions"],
): Promise<Client> {
  if ("kubeconfigPath" in config) {
    return await createClient({
      ...options,
      kubeconfig: config.kubeconfigPath,
      ...(config.context ? { context: config.context } : {}),
    });
  }
  const path = await Deno.makeTempFile({ prefix: "kubeno-cluster-", suffix: ".yaml" });
  try {
    await Deno.chmod(path, 0o600);
    await Deno.writeTextFile(path, config.kubeconfigText);
    return await createClient({ ...options, kubeconfig: path });
  } finally {
    await Deno.remove(path).catch(() => {});
  }
}

/**
 * Creates a fleet: `controllers` on every cluster `clusters` engages. Nothing runs until
 * {@linkcode Fleet.prototype.start}.
 *
 * @param options Controllers, provider, hub and per-cluster options.
 * @returns The fleet.
 * @throws {RangeError} When `disengageTimeoutMs` is negative or `unreachableAfterMs` not
 * positive.
 * @throws {TypeError} When both `sharding` and `owns` are given.
 *
 * @example A ConfigMap controller on two clusters
 * ```ts
 * import { createFleet } from "./fleet.ts";
 * import { fixedClusters } from "./provider.ts";
 * import { reconcile } from "../controller/reconcile.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 * const fleet = createFleet({
 *   controllers: [reconcile(ConfigMap, { reconcile: (cm, ctx) => ctx.log.info(`${ctx.cluster}/${ctx.key}`) })],
 *   clusters: fixedClusters([
 *     { name: "eu-1", kubeconfig: "/etc/fleet/eu-1.yaml" },
 *     { name: "us-1", kubeconfig: "/etc/fleet/us-1.yaml" },
 *   ]),
 * });
 * if (fleet.clusters().length !== 0) throw new Error("nothing is engaged before start");
 * ```
 */
export function createFleet(options: FleetOptions): Fleet {
  if (options.sharding && options.owns) {
    throw new TypeError("Cannot create fleet: use sharding or owns, not both");
  }
  const t = options.disengageTimeoutMs;
  if (t !== undefined && !(t >= 0)) {
    throw new RangeError(`Cannot create fleet: disengageTimeoutMs must be >= 0, got "${t}"`);
  }
  const u = options.unreachableAfterMs;
  if (u !== undefined && !(u > 0)) {
    throw new RangeError(`Cannot create fleet: unreachableAfterMs must be > 0, got "${u}"`);
  }
  return new Fleet(options);
}
