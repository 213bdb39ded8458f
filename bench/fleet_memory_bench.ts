// Memory per engaged cluster (issue 33): one fleet process engages 1, 2 and 4 members, each
// caching the same N ConfigMaps (one informer per member: the members are names for one API
// server, so only the operator's side grows). Measured: V8 heap used after a full GC, above
// the heap of the same process before any fleet started, total and per member, and the
// process's RSS above the same baseline. Reported, never asserted.
//
//   deno task bench:fleet [--objects 1000]
import { parseArgs } from "node:util";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { createFleet } from "../src/runtime/cluster/fleet.ts";
import { createManager } from "../src/runtime/manager/manager.ts";
import { fixedClusters } from "../src/runtime/cluster/provider.ts";
import { startControlPlane } from "../src/testing/control_plane.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: { objects: { type: "string" } },
});
const N = Number(args.objects ?? 1000);
const NS = "fleet-bench";
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("Cannot measure heap: run with --v8-flags=--expose-gc");
const heap = async () => {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
  return Deno.memoryUsage();
};
const MiB = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

await using cp = await startControlPlane();
using client = await createClient({ kubeconfig: cp.kubeconfigPath });
await client.create(Namespace, { metadata: { name: NS } });
const payload = "x".repeat(512);
for (let i = 0; i < N; i += 50) {
  await Promise.all(
    Array.from({ length: Math.min(50, N - i) }, (_, j) =>
      client.create(ConfigMap, {
        metadata: { name: `cm-${i + j}`, namespace: NS, labels: { app: "bench" } },
        data: { payload },
      })),
  );
}
const controller = reconcile(ConfigMap, { primary: { namespaces: [NS] }, reconcile() {} });
const rows: string[] = [];
const base = await heap();
for (const members of [1, 2, 4]) {
  const fleet = createFleet({
    clusters: fixedClusters(
      Array.from({ length: members }, (_, i) => ({ name: `m${i}`, kubeconfig: cp.kubeconfigPath })),
    ),
  });
  // The hub is the same control plane; it holds no reads here.
  const manager = createManager({ client, controllers: [controller], fleet });
  const running = manager.start();
  while (fleet.clusters().filter((c) => c.ready).length < members) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const now = await heap();
  const used = now.heapUsed - base.heapUsed;
  rows.push(
    `| ${members} | ${N} | ${MiB(used)} | ${MiB(used / members)} | ${MiB(now.rss - base.rss)} |`,
  );
  await manager.stop();
  await running;
}
const after = await heap();
console.log(
  `| members | ConfigMaps each | heap above idle (MiB) | heap per member (MiB) | RSS above idle (MiB) |`,
);
console.log(`|---:|---:|---:|---:|---:|`);
for (const r of rows) console.log(r);
console.log(
  `\nafter the last fleet stopped: heap ${MiB(after.heapUsed - base.heapUsed)} MiB, RSS ${
    MiB(after.rss - base.rss)
  } MiB above idle`,
);
