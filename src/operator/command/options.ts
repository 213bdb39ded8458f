/**
 * The options of `operator()`, leader election and sharding among them. What the manifest
 * and RBAC generators read of a controller (`OperatorController`, in `deploy/rbac.ts`) and of a
 * webhook (`OperatorWebhook`, in `webhook/manifests.ts`) is defined in those lower layers, which
 * never import the operator program.
 *
 * @module
 */
import type { PolicyRule } from "../../core/kinds_cluster.ts";
import type { Controller } from "../../runtime/controller/reconcile.ts";
import type { RetryOptions } from "../../runtime/controller/retry.ts";
import type { Resource } from "../../core/resource.ts";
import type { ShardingOptions } from "../../runtime/sharding/coordinator.ts";
import type { OperatorWebhook } from "../../webhook/manifests.ts";
import type { ClusterProvider } from "../../runtime/cluster/provider.ts";

/**
 * A fleet: the controllers run on every member cluster a provider names, from a hub (the
 * cluster of `--kubeconfig`, or the one the pod runs in). See `createFleet`.
 */
export interface OperatorFleetOptions {
  /** Discovers the members, e.g. `kubeconfigSecrets({ namespace })`. */
  clusters: ClusterProvider;
  /**
   * Hub kinds the reconciles read through `hubOf(ctx)?.cache`; `manifests` grants reading them.
   * @default []
   */
  hubReads?: readonly Resource[];
  /**
   * The hub namespace `hubReads` are cached in.
   * @default all namespaces
   */
  hubNamespace?: string;
  /**
   * Disengage a member unreachable (not synced or failing) for this long; see `createFleet`.
   * @default never
   */
  unreachableAfterMs?: number;
}

/** Leader-election settings. */
export interface LeaderElectionOptions {
  /**
   * Whether `run` elects a leader when `--leader-elect` is not given.
   * @default false (the generated Deployment passes `--leader-elect`)
   */
  enabled?: boolean;
  /**
   * Name of the Lease.
   * @default the operator's name
   */
  leaseName?: string;
  /**
   * Namespace of the Lease.
   * @default `--leader-elect-namespace`, else the operator's namespace
   */
  namespace?: string;
  /**
   * How long a standby waits without seeing the Lease renewed before it takes over; flag
   * `--leader-elect-lease-duration` overrides it.
   * @default 15_000
   */
  leaseDurationMs?: number;
  /**
   * How long the leader retries a failed renewal before it stops leading (and exits); flag
   * `--leader-elect-renew-deadline` overrides it.
   * @default 10_000
   */
  renewDeadlineMs?: number;
  /**
   * Time between attempts to acquire or renew; a graceful stop hands over in about this
   * long. Flag `--leader-elect-retry-period` overrides it.
   * @default 2_000
   */
  retryPeriodMs?: number;
}

/**
 * Sharding: every replica runs at once and reconciles its share of the objects, handed out
 * through Leases and cached through the API server's sharded list and watch (see
 * `ShardCoordinator`). Flags of `run` override the identity and timings:
 * `--shard-identity`, `--shard-lease-duration`, `--shard-renew-deadline`,
 * `--shard-retry-period`.
 */
export interface OperatorShardingOptions extends ShardingOptions {
  /**
   * Replicas of the generated Deployment.
   * @default 3
   */
  replicas?: number;
}

/** Options of `operator()`. */
export interface OperatorOptions {
  /** The operator's name: a DNS label, e.g. `myapp-operator`. Names its objects. */
  name: string;
  /**
   * The operator's version, printed by `version` and used in the default image tag.
   * @default "0.0.0"
   */
  version?: string;
  /** The controllers `run` starts, from `reconcile()`. */
  controllers: readonly Controller<any>[];
  /**
   * The retry policy of every controller: the fields a controller's own `reconcile({ retry })`
   * does not set — the equivalent of controller-runtime's manager-wide
   * `config.Controller`/`RateLimiter` and of Java Operator SDK's default `GradualRetry`
   * (`ConfigurationService.getRetry`). See `reconcile()`'s `retry`.
   * @default 5 ms doubling to 1,000,000 ms, attempts without end
   */
  retry?: RetryOptions;
  /**
   * Custom resources to install besides the controllers' primaries (kinds the operator
   * creates or watches but does not reconcile). Only resources with a CRD (from
   * `defineResource`) are installed.
   * @default []
   */
  resources?: readonly Resource[];
  /**
   * Admission webhooks the operator serves.
   * @default []
   */
  webhooks?: readonly OperatorWebhook[];
  /**
   * Container image of the generated Deployment.
   * @default `<name>:<version>`
   */
  image?: string;
  /**
   * Namespace the operator runs in (leases, its Deployment, its ServiceAccount).
   * @default `POD_NAMESPACE`, then `<name>-system`
   */
  namespace?: string;
  /**
   * Leader election; `true` enables it without `--leader-elect`.
   * @default false
   */
  leaderElection?: boolean | LeaderElectionOptions;
  /**
   * Share the objects among replicas instead of electing a leader (`true` for the
   * defaults: 12 shards by uid). Not with `leaderElection`.
   * @default no sharding
   */
  sharding?: boolean | OperatorShardingOptions;
  /**
   * Extra RBAC rules for the operator's ClusterRole (or Role when scoped), for objects the
   * controllers read or write through the client rather than through `owns`/`watches`.
   * @default []
   */
  rules?: readonly PolicyRule[];
  /**
   * Namespaces `run` watches when neither `--watch-namespace` nor `WATCH_NAMESPACE` is given;
   * empty means all. The kubebuilder seed watches the namespace it runs in:
   * `watchNamespaces: [Deno.env.get("POD_NAMESPACE") ?? ""]` (an empty string is ignored).
   * @default [] (all namespaces)
   */
  watchNamespaces?: readonly string[];
  /**
   * Run the controllers on a fleet of member clusters instead of the one of `--kubeconfig`,
   * which becomes the hub: `run` engages every member the provider names, `manifests` prints
   * the hub's set (`--member`: the set to apply on every member), `install` applies the CRDs
   * on the cluster of `--kubeconfig` (point it at each member). Not with `leaderElection`.
   *
   * With `sharding`, the members are spread over the replicas instead of the objects: one
   * Lease per member on the hub (in the operator's namespace), so each member is engaged by
   * exactly one replica at a time, ⌊n/r⌋ or ⌈n/r⌉ of the n members each; a member that changes
   * hands is disengaged (drained) by its old replica before its Lease is freed. The identity,
   * timings and the Deployment's replicas are those of object sharding (`--shard-identity`,
   * else `POD_NAME`; `--shard-lease-duration`, ...; `sharding.replicas`); `sharding.shards`
   * and `sharding.key` do not apply.
   * @default one cluster
   */
  fleet?: OperatorFleetOptions;
}
