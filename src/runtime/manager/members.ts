/**
 * `MemberClusters`: what a {@linkcode Manager} runs when its controllers run on member
 * clusters instead of its own (multicluster-runtime's provider under one manager). The
 * manager's client is then the hub; the member clusters come and go at run time, each with a
 * {@linkcode ClusterScope} whose informers and controllers the manager runs in its groups.
 * `createFleet()` (`runtime/cluster`) is the implementation.
 *
 * @module
 */
import type { Client } from "../../client/client.ts";
import type { Informer } from "../cache/informer.ts";
import type { ShardCoordinator, ShardCoordinatorOptions } from "../sharding/coordinator.ts";
import type { ClusterScope, ClusterScopeOptions } from "./cluster_scope.ts";
import type { Runnable } from "./runnable.ts";

/** What the manager gives the member clusters it runs. */
export interface MemberHost {
  /** The hub's client: the manager's. */
  readonly hub: Client;
  /** Aborted when the manager begins to stop. */
  readonly signal: AbortSignal;
  /** The coordinator spreading the members over replicas, with the manager's `sharding`. */
  readonly sharding: ShardCoordinator | undefined;
  /**
   * A member's scope: the manager's controllers on `client`, its informers and controllers
   * ready to {@linkcode MemberHost.engage}.
   *
   * @param cluster The member's name (`ctx.cluster`).
   * @param client The member's client.
   * @param options The member's controller metrics, how long its controllers' stop waits
   * for in-flight reconciles, and where its failures go (never to the manager).
   * @returns The scope, not running yet.
   */
  scope(
    cluster: string,
    client: Client,
    options: Pick<ClusterScopeOptions, "metrics" | "shutdownTimeoutMs" | "onFault">,
  ): ClusterScope;
  /**
   * Runs a scope's runnables in the manager's groups: its informers at once, its controllers
   * once this replica leads (at once when it does).
   *
   * @param scope The member's scope.
   */
  engage(scope: ClusterScope): Promise<void>;
  /**
   * Stops a scope's runnables, controllers first (in-flight reconciles get the
   * `disengageTimeoutMs` the scope was made with, then their `ctx.signal` aborts), then its
   * informers, and removes them from the manager.
   *
   * @param scope The member's scope.
   */
  disengage(scope: ClusterScope): Promise<void>;
  /**
   * Reports a failure that should stop the manager (the provider failed).
   *
   * @param error What failed.
   */
  fail(error: unknown): void;
}

/** Member clusters, as the manager's `fleet` option. */
export interface MemberClusters {
  /**
   * The runnables of the hub side (the provider, the hub's caches), given the host; called
   * once, when the manager builds what it runs.
   *
   * @param host What the manager gives.
   * @returns Runnables to add to the manager's groups.
   */
  attach(host: MemberHost): Runnable[];
  /**
   * What the manager's `sharding` coordinator spreads: one named shard per member, and the
   * drain that disengages the members moving away.
   *
   * @returns The coordinator's `named` and `drain` options.
   */
  shards(): Pick<ShardCoordinatorOptions, "named" | "drain">;
  /**
   * Readiness of the hub side: its caches synced. One member's state does not make the
   * manager unready.
   *
   * @returns `true` once the hub's caches synced.
   */
  ready(): boolean;
  /**
   * The hub's informers, for probes and cache metrics.
   *
   * @returns The informers.
   */
  hubInformers(): Informer<any>[];
  /**
   * Queues every primary of every member (e.g. on demand).
   *
   * @param controller Only this controller's.
   * @returns How many keys were queued.
   */
  reconcileAll(controller?: string): number;
}
