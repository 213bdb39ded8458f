/**
 * `createFleet()`: the member clusters of one `Manager` — its controllers on every
 * cluster a {@linkcode ClusterProvider} engages, as multicluster-runtime's provider under one
 * `mcmanager`. Give the fleet to the manager, whose client is then the hub:
 * `createManager({ client: hub, controllers, fleet: createFleet({ clusters }) })`. The
 * manager runs the provider and the hub's caches in its `cache` group; for each engaged
 * cluster it runs that cluster's informers (`cache`) and controllers (`leader`) in its groups,
 * so leader election, `sharding` (one Lease per member), probes, metrics and the stop order
 * are the same as for one cluster. `ctx.client`, `ctx.cache` and `ctx.events` are the
 * member's, `ctx.cluster` names it and `hubOf(ctx)` reads the hub.
 *
 * ## Flow
 *
 * On `engage(name, config)`: build the member's client (a kubeconfig from a Secret goes
 * through a private temp file for as long as it takes to read it), ask it once whether its API
 * server answers, and add its scope's runnables to the manager. On `disengage(name)`: remove
 * them — the controllers first (in-flight reconciles get `disengageTimeoutMs`, then their
 * `ctx.signal` aborts), then the informers, which closes its watches — close its client and
 * forget it. A change of a `hubReads` object queues every primary of every member.
 *
 * ## Guarantees
 *
 * - Members are independent: each has its own client, informers, queues and workers, and a
 *   member's failure goes to its own state ({@linkcode Fleet.prototype.clusters}), never to
 *   the manager; one slow, unreachable or failing member delays no other's engage, sync or
 *   reconciles.
 * - A member whose configuration cannot be used (a malformed kubeconfig, a Secret without its
 *   key) or whose API server does not answer gets one log line and a Warning Event on the
 *   object that configured it (its Secret); the others are unaffected.
 * - Engage and disengage of one name are applied in order; engaging a name again with the
 *   same config changes nothing, with another (rotated credentials) replaces its scope.
 * - The manager's stop disengages every member before its `start()` resolves.
 *
 * ## Caveats
 *
 * - Without `unreachableAfterMs` a member stays engaged while unreachable (its informers
 *   retry with backoff) until its provider disengages it.
 *
 * @module
 */
import { getLogger } from "../../util/log.ts";
import { firstLine } from "../../util/cli_io.ts";
import { type Client, type ClientOptions, createClient } from "../../client/client.ts";
import { KubeconfigError } from "../../client/kubeconfig/kubeconfig_error.ts";
import type { Resource } from "../../core/resource.ts";
import type { ControllerMetricsHooks } from "../controller/metrics_hooks.ts";
import { EventRecorder } from "../controller/events.ts";
import { InformerFactory } from "../cache/informer_factory.ts";
import { InformerReader } from "../cache/reader.ts";
import type { Informer } from "../cache/informer.ts";
import type { ClusterScope } from "../manager/cluster_scope.ts";
import type { MemberClusters, MemberHost } from "../manager/members.ts";
import type { Runnable } from "../manager/runnable.ts";
import type { ShardCoordinatorOptions } from "../sharding/coordinator.ts";
import type { ClusterConfig, ClusterOrigin, ClusterProvider } from "./provider.ts";
import { type HubAccess, registerHub } from "./hub.ts";
import { HealthCheckError } from "../manager/health.ts";

const log = getLogger(["kubeno", "cluster"]);

/** Options of {@linkcode createFleet}. */
export interface FleetOptions {
  /** Discovers the clusters, e.g. `kubeconfigSecrets({ namespace })` or `fixedClusters([...])`. */
  clusters: ClusterProvider;
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
   * Re-asked on {@linkcode Fleet.prototype.reconsider}. Not with the manager's `sharding`,
   * which spreads the members over replicas by itself (one Lease per member on the hub).
   * @default every cluster (or, with `sharding`, those in the shards this replica holds)
   */
  owns?: (cluster: string) => boolean;
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
   * Who reports the Warning Events about unusable members on the hub (`reportingComponent`).
   * @default "kubeno"
   */
  component?: string;
  /** Called when a cluster was engaged or disengaged. */
  onCluster?: (event: { type: "engaged" | "disengaged"; cluster: string }) => void;
}

/** One engaged cluster, as {@linkcode Fleet.prototype.clusters} reports it. */
export interface ClusterStatus {
  /** Its name. */
  name: string;
  /** Its controllers' caches synced: it reconciles. */
  ready: boolean;
  /** No informer of it failing after it synced. */
  healthy: boolean;
  /** Why its client or controllers failed, if they did. */
  error?: string;
}

interface Engaged {
  config: string;
  /** Since when (ms, monotonic) it has been not synced or failing. */
  unwellSince?: number;
  scope?: ClusterScope;
  client?: Client;
  error?: string;
}

/**
 * The provider's abort reason, made once: an error made at stop would keep the stopping
 * frames (and the caches of the members they stopped) reachable from the signal.
 */
const PROVIDER_STOPPED = new DOMException("The fleet stops", "AbortError");

/** How long the first request to an engaged member may take before it counts as unreachable. */
const REACH_TIMEOUT_MS = 10_000;

/**
 * The member clusters of one manager. Create it with {@linkcode createFleet} and give it to
 * `createManager({ fleet })`.
 */
export class Fleet implements MemberClusters {
  readonly #opts: FleetOptions;
  readonly #clusters = new Map<string, Engaged>();
  /** Per name, the engage/disengage steps in order. */
  readonly #chains = new Map<string, Promise<void>>();
  /** The provider's view: every cluster it engaged, owned here or not. */
  readonly #known = new Map<string, ClusterConfig>();
  readonly #retries = new Set<ReturnType<typeof setTimeout>>();
  #host: MemberHost | undefined;
  #hub: HubAccess | undefined;
  #hubInformers: InformerFactory | undefined;
  #events: EventRecorder | undefined;
  #stopping = false;

  /**
   * Prefer {@linkcode createFleet}.
   *
   * @param options Provider, hub reads and per-cluster options.
   */
  constructor(options: FleetOptions) {
    this.#opts = options;
  }

  /**
   * The engaged clusters and their state.
   *
   * @returns One entry per engaged cluster, by name.
   */
  clusters(): ClusterStatus[] {
    return [...this.#clusters].sort(([a], [b]) => a < b ? -1 : 1).map(([name, e]) => ({
      name,
      ready: e.scope?.synced() ?? false,
      healthy: e.error === undefined && (e.scope?.healthy() ?? true),
      ...(e.error ? { error: e.error } : {}),
    }));
  }

  /**
   * What runs one member: its informers and controllers.
   *
   * @param cluster The cluster's name.
   * @returns Its scope, or `undefined` when not engaged (yet).
   */
  scope(cluster: string): ClusterScope | undefined {
    return this.#clusters.get(cluster)?.scope;
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
      if (!this.ready()) throw new HealthCheckError("Hub caches not synced");
      const parts = this.clusters().map((c) => `${c.name}: ${verdict(c)}`);
      return parts.join("; ") || "no clusters engaged";
    };
  }

  /**
   * Asks `owns` (or the manager's shards) again for every known cluster: engages those now
   * taken, disengages those given up.
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
   * The provider and the hub's caches, as runnables of the manager's `cache` group.
   *
   * @param host What the manager gives its members.
   * @returns The runnables.
   * @throws {TypeError} When attached twice, or `owns` is given with the manager's `sharding`.
   */
  attach(host: MemberHost): Runnable[] {
    if (this.#host) throw new TypeError("Cannot attach the fleet: it runs under a manager already");
    if (host.sharding && this.#opts.owns) {
      throw new TypeError("Cannot run the fleet: use the manager's sharding or owns, not both");
    }
    this.#host = host;
    this.#hub = this.#hubAccess(host.hub);
    this.#events = new EventRecorder(host.hub, { component: this.#opts.component ?? "kubeno" });
    host.sharding?.filter.subscribe(() => void this.reconsider());
    const hubInformers = this.#hubInformers!;
    return [{
      name: "hub caches",
      group: "cache",
      start: () => void ((this.#opts.hubReads ?? []).length && hubInformers.start()),
      stop: () => hubInformers.stop(),
    }, this.#providerRunnable(host)];
  }

  /**
   * One named shard per known member; the drain disengages those moving away.
   *
   * @returns The coordinator's `named` and `drain`.
   */
  shards(): Pick<ShardCoordinatorOptions, "named" | "drain"> {
    return {
      named: { keys: () => [...this.#known.keys()] },
      drain: async (inShards) => {
        const moving = [...this.#clusters.keys()].filter((n) =>
          inShards({ metadata: { name: n } })
        );
        await Promise.all(moving.map((n) => this.#disengage(n)));
      },
    };
  }

  /**
   * Whether the hub's caches synced.
   *
   * @returns `true` once they did.
   */
  ready(): boolean {
    return this.hubInformers().every((i) => i.hasSynced);
  }

  /**
   * The hub's informers (`hubReads`).
   *
   * @returns The informers.
   */
  hubInformers(): Informer<any>[] {
    return [...this.#hubInformers?.all() ?? []];
  }

  /**
   * Queues every primary of every engaged member.
   *
   * @param controller Only this controller's.
   * @returns How many keys were queued.
   */
  reconcileAll(controller?: string): number {
    let n = 0;
    for (const e of this.#clusters.values()) n += e.scope?.reconcileAll(controller) ?? 0;
    return n;
  }

  #owns(name: string): boolean {
    const sharding = this.#host?.sharding;
    if (sharding) return sharding.filter.matches({ metadata: { name } });
    return this.#opts.owns?.(name) ?? true;
  }

  /** The provider, run in the background from the `cache` group; its failure stops the manager. */
  #providerRunnable(host: MemberHost): Runnable {
    const stop = new AbortController();
    let running: Promise<void> | undefined;
    let watchdog: ReturnType<typeof setInterval> | undefined;
    return {
      name: `cluster provider (${this.#opts.clusters.name})`,
      group: "cache",
      start: () => {
        const unreachable = this.#opts.unreachableAfterMs;
        if (unreachable !== undefined) {
          watchdog = setInterval(
            () => this.#checkReachable(unreachable),
            Math.min(1_000, unreachable / 4),
          );
        }
        running = this.#opts.clusters.run({
          hub: host.hub,
          signal: stop.signal,
          engage: (name, config) => this.#found(name, config),
          disengage: (name) => this.#gone(name),
          invalid: (name, problem, origin) => {
            this.#gone(name);
            this.#report(name, "InvalidCluster", problem, origin);
          },
        }).catch((err) => {
          if (stop.signal.aborted) return;
          log.error("Cluster provider {provider} failed: {error}", {
            provider: this.#opts.clusters.name,
            error: firstLine(err),
          });
          host.fail(err);
        });
      },
      stop: async () => {
        this.#stopping = true;
        stop.abort(PROVIDER_STOPPED);
        clearInterval(watchdog);
        for (const t of this.#retries) clearTimeout(t);
        await running;
        await Promise.all([...this.#clusters.keys()].map((name) => this.#disengage(name)));
        await Promise.all([...this.#chains.values()]);
        await this.#events?.flush();
      },
    };
  }

  #found(name: string, config: ClusterConfig): void {
    if (this.#stopping) return;
    const fresh = !this.#known.has(name);
    this.#known.set(name, config);
    if (fresh) this.#host?.sharding?.refresh();
    if (this.#owns(name)) void this.#engage(name, config);
  }

  #gone(name: string): void {
    this.#known.delete(name);
    this.#host?.sharding?.refresh();
    void this.#disengage(name);
  }

  /** One log line and a Warning Event on the object that configured the member. */
  #report(name: string, reason: string, problem: string, origin?: ClusterOrigin): void {
    log.error("Cannot engage cluster {cluster}: {error}", { cluster: name, error: problem });
    if (!origin) return;
    this.#events?.warning(origin, reason, `Cannot engage cluster ${name}: ${problem}`)
      .catch(() => {});
  }

  /** Disengages the clusters unwell for longer than `limitMs`; engages them again later. */
  #checkReachable(limitMs: number): void {
    const now = performance.now();
    for (const [name, e] of this.#clusters) {
      const well = e.scope !== undefined && e.scope.synced() && e.scope.healthy();
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
      inf.addHandler({ onEvent: () => void this.reconcileAll() });
      return { resource, informers: [inf] };
    });
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
      const host = this.#host!;
      const text = JSON.stringify(config);
      const had = this.#clusters.get(name);
      if (had?.config === text || this.#stopping || host.signal.aborted) return;
      if (had) await this.#teardown(name, had, "its access changed");
      const e: Engaged = { config: text };
      this.#clusters.set(name, e);
      try {
        e.client = await clusterClient(config, this.#opts.clientOptions);
      } catch (err) {
        e.error = firstLine(err);
        this.#report(name, "InvalidKubeconfig", e.error, config.origin);
        return;
      }
      if (this.#hub) registerHub(e.client, this.#hub);
      const scope = host.scope(name, e.client, {
        metrics: this.#opts.metrics?.(name),
        shutdownTimeoutMs: this.#opts.disengageTimeoutMs ?? 5_000,
        onFault: (err) => {
          e.error = firstLine(err);
          log.error("Cluster {cluster} failed: {error}", { cluster: name, error: e.error });
        },
      });
      e.scope = scope;
      await host.engage(scope);
      log.info("Engaged cluster {cluster} ({server})", { cluster: name, server: e.client.server });
      this.#opts.onCluster?.({ type: "engaged", cluster: name });
      void this.#probe(name, e, config.origin);
    });
  }

  /** Asks a just-engaged member's API server once; one that does not answer is reported. */
  async #probe(name: string, e: Engaged, origin?: ClusterOrigin): Promise<void> {
    const client = e.client!;
    try {
      await client.request("GET", "/version", { signal: AbortSignal.timeout(REACH_TIMEOUT_MS) });
    } catch (err) {
      if (this.#clusters.get(name) !== e || this.#stopping) return;
      this.#report(name, "ClusterUnreachable", `${client.server}: ${firstLine(err)}`, origin);
    }
  }

  #disengage(name: string): Promise<void> {
    return this.#serial(name, async () => {
      const e = this.#clusters.get(name);
      if (!e) return;
      await this.#teardown(name, e, "disengaged");
    });
  }

  async #teardown(name: string, e: Engaged, why: string): Promise<void> {
    if (e.scope) await this.#host!.disengage(e.scope);
    e.client?.close();
    this.#clusters.delete(name);
    log.info("Disengaged cluster {cluster}: {why}", { cluster: name, why });
    this.#opts.onCluster?.({ type: "disengaged", cluster: name });
  }
}

/** How `/readyz?verbose` names a member's state. */
function verdict(c: ClusterStatus): string {
  if (c.error) return `failed (${c.error})`;
  if (!c.ready) return "not synced";
  return c.healthy ? "ready" : "unhealthy";
}

/**
 * A cluster's client; a kubeconfig's text goes through a private temp file, then removed.
 *
 * @param config How to reach the cluster, as its provider engaged it.
 * @param options Client options (field manager, user agent...).
 * @returns The client; close it when done.
 * @throws {KubeconfigError} For a kubeconfig it cannot use, naming where a text came from.
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
  } catch (err) {
    // The temp file means nothing to whoever fixes it: name where the text came from.
    if (!(err instanceof KubeconfigError) || err.path !== path) throw err;
    const o = config.origin?.metadata;
    const where = o
      ? `${config.origin!.kind} ${o.namespace ? `${o.namespace}/` : ""}${o.name}`
      : "given as text";
    const prefix = `Cannot load kubeconfig "${path}": `;
    throw new KubeconfigError(where, err.message.slice(prefix.length), { cause: err.cause });
  } finally {
    await Deno.remove(path).catch(() => {});
  }
}

/**
 * Creates a fleet: the member clusters `clusters` engages, for `createManager({ fleet })`.
 * Nothing runs until the manager starts.
 *
 * @param options Provider, hub reads and per-cluster options.
 * @returns The fleet.
 * @throws {RangeError} When `disengageTimeoutMs` is negative or `unreachableAfterMs` not
 * positive.
 *
 * @example A ConfigMap controller on two clusters
 * ```ts
 * import { createFleet } from "./fleet.ts";
 * import { fixedClusters } from "./provider.ts";
 * import { reconcile } from "../controller/reconcile.ts";
 * import { createManager } from "../manager/manager.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 * import type { Client } from "../../client/client.ts";
 * const fleet = createFleet({
 *   clusters: fixedClusters([
 *     { name: "eu-1", kubeconfig: "/etc/fleet/eu-1.yaml" },
 *     { name: "us-1", kubeconfig: "/etc/fleet/us-1.yaml" },
 *   ]),
 * });
 * const manager = createManager({
 *   client: {} as Client, // the hub's
 *   controllers: [reconcile(ConfigMap, { reconcile: (_cm, ctx) => ctx.log.info(`${ctx.cluster}/${ctx.key}`) })],
 *   fleet,
 * });
 * if (fleet.clusters().length !== 0 || manager.ready()) throw new Error("nothing runs before start");
 * ```
 */
export function createFleet(options: FleetOptions): Fleet {
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
