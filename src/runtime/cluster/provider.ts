/**
 * Cluster providers: where a fleet learns which clusters to reconcile, at run time.
 * `fixedClusters([...])` names kubeconfig files; `kubeconfigSecrets({ namespace })` follows
 * labelled Secrets on the hub, the convention of multicluster-runtime's kubeconfig provider
 * (label `sigs.k8s.io/multicluster-runtime-kubeconfig: "true"`, the kubeconfig under the key
 * `kubeconfig`, the cluster named as the Secret). An author's own provider (Cluster API
 * `Cluster`s, a file, a service catalogue) implements {@linkcode ClusterProvider}.
 *
 * ## Flow
 *
 * The fleet calls `run(events)` once; the provider calls `events.engage(name, config)` when a
 * cluster appears or its access changes and `events.disengage(name)` when it goes, until
 * `events.signal` aborts; then `run` resolves.
 *
 * ## Guarantees
 *
 * - A provider never blocks the fleet: engaging builds the cluster's client and runtimes in
 *   the background, one cluster at a time per name.
 *
 * @module
 */
import type { Client } from "../../client/client.ts";
import { Secret } from "../../core/kinds.ts";
import { informer } from "../cache/informer.ts";

/**
 * The object a cluster's access comes from (e.g. its kubeconfig Secret on the hub): where the
 * fleet records a Warning Event when that access cannot be used.
 */
export interface ClusterOrigin {
  /** Its API version, e.g. `v1`. */
  readonly apiVersion: string;
  /** Its kind, e.g. `Secret`. */
  readonly kind: string;
  /** Its name, namespace and uid. */
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly uid?: string };
}

/**
 * How to reach one cluster: a kubeconfig file, or a kubeconfig's text (e.g. from a Secret),
 * and the object it came from.
 */
export type ClusterConfig =
  & (
    | {
      /** Path of a kubeconfig file. */
      readonly kubeconfigPath: string;
      /** Its context; its current-context when absent. */
      readonly context?: string;
    }
    | { /** A kubeconfig document, YAML or JSON. */ readonly kubeconfigText: string }
  )
  & { /** Where it came from, for Events about it. */ readonly origin?: ClusterOrigin };

/** What a provider's `run` gets: the hub and the two callbacks. */
export interface ClusterEvents {
  /** The hub's client, when the fleet has a hub. */
  readonly hub: Client | undefined;
  /** Aborted when the fleet stops: stop watching, and resolve. */
  readonly signal: AbortSignal;
  /**
   * A cluster appeared, or its access changed: the fleet (re)builds its client and runtimes.
   * Engaging a name again with the same config changes nothing.
   *
   * @param name The cluster's name, unique within the provider.
   * @param config How to reach it.
   */
  engage(name: string, config: ClusterConfig): void;
  /**
   * A cluster went away: the fleet stops its informers, cancels its in-flight reconciles
   * (after the fleet's `disengageTimeoutMs`) and forgets it. Unknown names are ignored.
   *
   * @param name The cluster's name.
   */
  disengage(name: string): void;
  /**
   * What the provider found for `name` cannot be a cluster (e.g. its Secret lacks the
   * key): the fleet logs one line naming `problem`, records a Warning Event on `origin`, and
   * disengages the name if it was engaged.
   *
   * @param name The cluster's name.
   * @param problem What is wrong and what to do, one line.
   * @param origin The object that named it.
   */
  invalid(name: string, problem: string, origin?: ClusterOrigin): void;
  /**
   * Called once, when every cluster the provider knows at start has been engaged (its first
   * list, say): `install` reads the provider until then to learn the members. Optional for a
   * provider; one that never calls it makes `install` wait out its `--timeout`.
   */
  synced?(): void;
}

/** Discovers clusters for a fleet; see the module doc. */
export interface ClusterProvider {
  /** Names the provider in logs, e.g. `kubeconfig Secrets in "fleet-system"`. */
  readonly name: string;
  /**
   * Engages and disengages clusters until `events.signal` aborts.
   *
   * @param events The hub and the callbacks.
   * @returns A promise that resolves once the provider stopped.
   */
  run(events: ClusterEvents): Promise<void>;
  /**
   * The hub RBAC rules this provider needs (e.g. read its Secrets), for `manifests`.
   * @default none
   */
  readonly hubRules?: readonly HubRule[];
}

/** One RBAC rule a provider needs on the hub: a Role in `namespace`, or a ClusterRole. */
export interface HubRule {
  /** Where the Role lives; absent for a ClusterRole. */
  readonly namespace?: string;
  /** API groups, `""` for core. */
  readonly apiGroups: readonly string[];
  /** Resources, e.g. `secrets`. */
  readonly resources: readonly string[];
  /** Verbs, e.g. `get`, `list`, `watch`. */
  readonly verbs: readonly string[];
}

/** One entry of {@linkcode fixedClusters}. */
export interface FixedCluster {
  /** The cluster's name in `ctx.cluster`, logs and metrics. */
  readonly name: string;
  /** Path of its kubeconfig file. */
  readonly kubeconfig: string;
  /**
   * The kubeconfig context to use.
   * @default its current-context
   */
  readonly context?: string;
}

/**
 * A provider of a fixed list of clusters, each from a kubeconfig file: all are engaged at
 * start and stay engaged until the fleet stops.
 *
 * @param clusters The clusters.
 * @returns The provider.
 * @throws {TypeError} When two clusters share a name.
 *
 * @example Two clusters from files
 * ```ts
 * import { fixedClusters } from "./provider.ts";
 * const provider = fixedClusters([
 *   { name: "eu-1", kubeconfig: "/etc/fleet/eu-1.yaml" },
 *   { name: "us-1", kubeconfig: "/etc/fleet/us-1.yaml" },
 * ]);
 * if (!provider.name.includes("2 clusters")) throw new Error(provider.name);
 * ```
 */
export function fixedClusters(clusters: readonly FixedCluster[]): ClusterProvider {
  const names = new Set<string>();
  for (const c of clusters) {
    if (names.has(c.name)) {
      throw new TypeError(`Cannot list fixed clusters: two clusters are named "${c.name}"`);
    }
    names.add(c.name);
  }
  return {
    name: `fixed list of ${clusters.length} clusters`,
    async run(events) {
      for (const c of clusters) {
        events.engage(c.name, {
          kubeconfigPath: c.kubeconfig,
          ...(c.context ? { context: c.context } : {}),
        });
      }
      events.synced?.();
      await new Promise<void>((resolve) => {
        if (events.signal.aborted) return resolve();
        events.signal.addEventListener("abort", () => resolve(), { once: true });
      });
    },
  };
}

/** The label multicluster-runtime's kubeconfig provider selects its Secrets by. */
export const KUBECONFIG_SECRET_LABEL = "sigs.k8s.io/multicluster-runtime-kubeconfig";

/** Options of {@linkcode kubeconfigSecrets}. */
export interface KubeconfigSecretsOptions {
  /** The hub namespace holding the Secrets. */
  readonly namespace: string;
  /**
   * Which Secrets are clusters.
   * @default `sigs.k8s.io/multicluster-runtime-kubeconfig=true`
   */
  readonly labelSelector?: string;
  /**
   * The data key holding the kubeconfig.
   * @default "kubeconfig"
   */
  readonly key?: string;
}

/**
 * A provider of the clusters whose kubeconfigs are Secrets in one hub namespace, as
 * multicluster-runtime's kubeconfig provider: each Secret labelled
 * `sigs.k8s.io/multicluster-runtime-kubeconfig: "true"` is a cluster named as the Secret,
 * its kubeconfig under `data.kubeconfig`. Creating one engages the cluster, changing its
 * kubeconfig re-engages it, deleting it (or removing the label or key) disengages it.
 *
 * @param options The namespace, and optionally the label selector and the key.
 * @returns The provider; it needs a fleet with a hub.
 * @throws {TypeError} When `namespace` is empty.
 *
 * @example Clusters from Secrets in "fleet-system"
 * ```ts
 * import { kubeconfigSecrets } from "./provider.ts";
 * const provider = kubeconfigSecrets({ namespace: "fleet-system" });
 * if (provider.hubRules?.[0].resources[0] !== "secrets") throw new Error();
 * ```
 */
export function kubeconfigSecrets(options: KubeconfigSecretsOptions): ClusterProvider {
  const { namespace } = options;
  if (!namespace) {
    throw new TypeError("Cannot follow kubeconfig Secrets: namespace must not be empty");
  }
  const labelSelector = options.labelSelector ?? `${KUBECONFIG_SECRET_LABEL}=true`;
  const key = options.key ?? "kubeconfig";
  return {
    name: `kubeconfig Secrets in "${namespace}"`,
    hubRules: [{
      namespace,
      apiGroups: [""],
      resources: ["secrets"],
      verbs: ["get", "list", "watch"],
    }, {
      // Warning Events on a Secret whose kubeconfig cannot be used.
      namespace,
      apiGroups: ["", "events.k8s.io"],
      resources: ["events"],
      verbs: ["create", "patch"],
    }],
    async run(events) {
      if (!events.hub) {
        throw new TypeError("Cannot follow kubeconfig Secrets: the fleet has no hub client");
      }
      const secrets = informer(Secret, { client: events.hub, namespace, labelSelector });
      secrets.addHandler({
        onEvent: (ev) => {
          const name = ev.object.metadata.name!;
          if (ev.type === "deleted") return events.disengage(name);
          const origin: ClusterOrigin = {
            apiVersion: "v1",
            kind: "Secret",
            metadata: { name, namespace, uid: ev.object.metadata.uid },
          };
          const data = ev.object.data?.[key];
          if (!data) {
            return events.invalid(
              name,
              `Secret ${namespace}/${name} has no key "${key}": put the member's kubeconfig there`,
              origin,
            );
          }
          const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
          events.engage(name, { kubeconfigText: new TextDecoder().decode(bytes), origin });
        },
      });
      secrets.start();
      void secrets.synced().then(() => events.synced?.(), () => {});
      await new Promise<void>((resolve) => {
        if (events.signal.aborted) return resolve();
        events.signal.addEventListener("abort", () => resolve(), { once: true });
      });
      await secrets.stop();
    },
  };
}
