// The fleet both replicas of tests/multicluster_replicas_test.ts run: a ConfigMap controller
// on every member, each reconcile reported with its cluster and wall-clock interval.
import type { Client } from "../src/client/client.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { createFleet, type Fleet } from "../src/runtime/cluster/fleet.ts";
import { kubeconfigSecrets } from "../src/runtime/cluster/provider.ts";

export const REPLICA_NAMESPACE = "fleet-replicas";
export const LEASE_MS = 4_000;
export const RETRY_MS = 500;

export function fleetReplica(hub: Client, identity: string, out: (line: string) => void): Fleet {
  const audit = reconcile(ConfigMap, {
    name: "audit",
    scope: { namespaces: [REPLICA_NAMESPACE], labelSelector: "audit=true" },
    async reconcile(_cm, ctx) {
      const start = Date.now();
      await new Promise((r) => setTimeout(r, 20));
      out(`reconciled ${ctx.cluster} ${start} ${Date.now()}`);
    },
  });
  return createFleet({
    hub,
    controllers: [audit],
    clusters: kubeconfigSecrets({ namespace: REPLICA_NAMESPACE }),
    onCluster: (ev) => out(`${ev.type} ${ev.cluster}`),
    sharding: {
      name: "fleet",
      namespace: REPLICA_NAMESPACE,
      identity,
      leaseDurationMs: LEASE_MS,
      renewDeadlineMs: 3_000,
      retryPeriodMs: RETRY_MS,
    },
  });
}
