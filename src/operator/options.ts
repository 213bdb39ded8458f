/**
 * The shapes `operator()` works with: what it needs to know about a controller, a webhook and
 * leader election, and its options. Kept apart from `operator.ts` so that the manifest and
 * RBAC generators can use them without importing the CLI.
 *
 * @module
 */
import type { PolicyRule } from "../core/kinds_cluster.ts";
import type { KubeObject } from "../core/object.ts";
import type { Controller } from "../runtime/controller/reconcile.ts";
import type { Resource } from "../core/resource.ts";
import type { ShardingOptions } from "../runtime/sharding/coordinator.ts";

/**
 * What the operator's CLI reads from a controller: its name, the kind it reconciles, the
 * kinds it owns, watches and caches, and its finalizer. Every `Controller` returned by `reconcile()`
 * has this shape.
 */
export interface OperatorController {
  /** Controller name, unique within the operator. */
  readonly name: string;
  /** The primary kind it reconciles. */
  readonly resource: Resource;
  /** Kinds it creates and whose controller ownerReference points at a primary. */
  readonly owns: readonly Resource[];
  /** Other kinds it watches and maps to primaries. */
  readonly watches: readonly { readonly resource: Resource }[];
  /** The finalizer it adds to primaries, if any. */
  readonly finalizer?: string;
  /**
   * Every kind it caches (primary, owned, watched, read) and the namespaces each is limited
   * to; RBAC grants `get`/`list`/`watch` on each, in those namespaces only.
   * @default the primary, `owns` and `watches`, unlimited
   */
  readonly caches?: readonly {
    readonly resource: Resource;
    readonly namespaces?: readonly string[];
  }[];
}

/** Where the operator's webhook server is reachable from the API server. */
export interface WebhookManifestContext {
  /** The operator's name. */
  operatorName: string;
  /** The namespace the operator runs in. */
  namespace: string;
  /** Name of the Service in front of the webhook server. */
  serviceName: string;
  /** Port of that Service. */
  servicePort: number;
  /** Port the webhook server listens on in the operator's pod. */
  containerPort: number;
}

/**
 * An admission webhook served by the operator, as the manifest generator sees it. It
 * contributes its entries of the cluster's webhook configurations and any extra permissions
 * its server needs; `operator()` adds the Service in front of the webhook server and the
 * container port.
 */
export interface OperatorWebhook {
  /**
   * The objects this webhook needs in the cluster, e.g. a `ValidatingWebhookConfiguration`
   * pointing at `ctx.serviceName`. Configurations with the same kind and name contributed
   * by several webhooks are merged (their `webhooks` lists concatenated).
   * @param ctx Where the webhook server is reachable.
   * @returns Cluster objects.
   */
  manifests(ctx: WebhookManifestContext): KubeObject[];
  /** Extra RBAC rules the webhook server needs in the operator's namespace (e.g. Secrets). */
  readonly rules?: readonly PolicyRule[];
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
}
