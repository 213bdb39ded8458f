/**
 * A fleet operator: settings kept on a hub cluster, pushed to every member cluster. The hub
 * holds a ConfigMap `fleet-settings` in `fleet-system` and one kubeconfig Secret per member
 * (labelled `sigs.k8s.io/multicluster-runtime-kubeconfig: "true"`, key `kubeconfig`). On
 * every member, each Namespace labelled `fleet.kubeno.dev/sync: "true"` gets a ConfigMap
 * `fleet-settings`: the hub's data plus `cluster`, the member's name. A member joins when its
 * Secret is created and leaves when it is deleted; a change of the hub's settings reaches
 * every member.
 *
 * ```sh
 * kubectl create namespace fleet-system
 * kubectl -n fleet-system create configmap fleet-settings --from-literal=mode=fast
 * kubectl -n fleet-system create secret generic member-1 --from-file=kubeconfig=member-1.yaml
 * kubectl -n fleet-system label secret member-1 sigs.k8s.io/multicluster-runtime-kubeconfig=true
 * deno run -A examples/fleet.ts manifests | kubectl apply -f -   # the hub's set
 * deno run -A examples/fleet.ts manifests --member > member.yaml  # apply on every member
 * deno run -A examples/fleet.ts run   # the hub is the current kubeconfig; /readyz?verbose
 *                                     # on :8081 lists the members
 * # on member-1:
 * kubectl create namespace team-a && kubectl label namespace team-a fleet.kubeno.dev/sync=true
 * kubectl -n team-a get configmap fleet-settings -o yaml
 * ```
 *
 * @module
 */
import { ConfigMap, Namespace, operator, reconcile } from "../mod.ts";
import { createManager, type Manager } from "../runtime/manager.ts";
import {
  createFleet,
  type Fleet,
  type FleetOptions,
  hubOf,
  kubeconfigSecrets,
} from "../runtime/cluster.ts";
import type { Client } from "../client.ts";

/** The hub namespace holding the settings and the members' kubeconfig Secrets. */
export const FLEET_NAMESPACE = "fleet-system";
/** The label that asks for the settings in a member's Namespace. */
export const SYNC_LABEL = "fleet.kubeno.dev/sync";

/** On each member: the hub's settings, and the member's name, into labelled Namespaces. */
export const pushSettings = reconcile(Namespace, {
  name: "fleet-settings",
  owns: [ConfigMap],
  primary: { labelSelector: `${SYNC_LABEL}=true` },
  async reconcile(ns, ctx) {
    const settings = hubOf(ctx)?.cache.get(ConfigMap, "fleet-settings", {
      namespace: FLEET_NAMESPACE,
    });
    await ctx.apply(ConfigMap, {
      metadata: { name: "fleet-settings", namespace: ns.metadata.name },
      data: { ...settings?.data, cluster: ctx.cluster ?? "" },
    });
    // Recorded on this member (its recorder writes through the member's client).
    ctx.events.normal(ns, "SettingsPushed", `fleet-settings pushed on ${ctx.cluster ?? "-"}`);
  },
});

/**
 * The fleet: {@linkcode pushSettings} on every member the hub's Secrets name, run by one
 * manager whose client is the hub.
 *
 * @param hub The hub's client.
 * @param options More fleet options (metrics, `owns` for replicas).
 * @returns The manager (start and stop it) and its fleet (the members' state), not started.
 */
export function fleetOperator(
  hub: Client,
  options: Partial<FleetOptions> = {},
): { manager: Manager; fleet: Fleet } {
  const fleet = createFleet({
    ...options,
    clusters: options.clusters ?? kubeconfigSecrets({ namespace: FLEET_NAMESPACE }),
    hubReads: [ConfigMap],
    hubNamespace: FLEET_NAMESPACE,
  });
  return { manager: createManager({ client: hub, controllers: [pushSettings], fleet }), fleet };
}

/** The operator program: `run` engages the members of the hub's kubeconfig Secrets. */
export const fleetProgram = operator({
  name: "fleet-operator",
  namespace: FLEET_NAMESPACE,
  controllers: [pushSettings],
  // Two replicas share the members: one Lease per member in fleet-system on the hub.
  sharding: { replicas: 2 },
  fleet: {
    clusters: kubeconfigSecrets({ namespace: FLEET_NAMESPACE }),
    hubReads: [ConfigMap],
    hubNamespace: FLEET_NAMESPACE,
  },
});

if (import.meta.main) await fleetProgram.main();
