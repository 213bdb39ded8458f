// Listing 10,000 ConfigMaps (~1.4 KB each, ~14 MB of JSON) over mutual TLS on loopback from a
// real kube-apiserver, three ways, interleaved so they see the same machine state:
//
//   kubeno        client.list (Deno fetch + Deno.createHttpClient, json(), kind filled in)
//   kubeno-paged  client.listAll with pages of 500
//   client-node   CoreV1Api.listNamespacedConfigMap (typed, through Node compatibility)
//
//   deno run -A bench/client_list_bench.ts [runs=7]
//
// Prints min / median / max milliseconds per way. Numbers are for comparison in the same run.
import * as k8s from "@kubernetes/client-node";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";

const runs = Number(Deno.args[0] ?? 7);
const total = 10_000;

await using cp = await startControlPlane();
using client = await createClient({ kubeconfig: cp.kubeconfigPath });
await client.create(Namespace, { metadata: { name: "bench" } });
const filler = "x".repeat(1_200);
let next = 0;
const t0 = performance.now();
await Promise.all(Array.from({ length: 32 }, async () => {
  while (next < total) {
    const i = next++;
    await client.create(ConfigMap, {
      metadata: { name: `cm-${i}`, namespace: "bench", labels: { bench: "list" } },
      data: { i: String(i), filler },
    });
  }
}));
console.log(`created ${total} ConfigMaps in ${(performance.now() - t0).toFixed(0)} ms`);

const kc = new k8s.KubeConfig();
kc.loadFromFile(cp.kubeconfigPath);
const core = kc.makeApiClient(k8s.CoreV1Api);

const ways: Record<string, () => Promise<number>> = {
  "kubeno": async () => (await client.list(ConfigMap, { namespace: "bench" })).items.length,
  "kubeno-paged": async () =>
    (await client.listAll(ConfigMap, { namespace: "bench", limit: 500 })).items.length,
  "client-node": async () =>
    (await core.listNamespacedConfigMap({ namespace: "bench" })).items.length,
};

const times: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
for (const fn of Object.values(ways)) await fn(); // warm up connections and caches
for (let r = 0; r < runs; r++) {
  for (const [name, fn] of Object.entries(ways)) {
    const start = performance.now();
    const n = await fn();
    times[name].push(performance.now() - start);
    if (n !== total) throw new Error(`${name} listed ${n} objects, expected ${total}`);
  }
}
const bytes = JSON.stringify(await client.list(ConfigMap, { namespace: "bench" })).length;
console.log(`runs: ${runs}, list JSON ~${(bytes / 1e6).toFixed(1)} MB`);
for (const [name, t] of Object.entries(times)) {
  t.sort((a, b) => a - b);
  console.log(
    `${name.padEnd(13)} min ${t[0].toFixed(0).padStart(5)} ms  median ${
      t[Math.floor(t.length / 2)].toFixed(0).padStart(5)
    } ms  max ${t[t.length - 1].toFixed(0).padStart(5)} ms`,
  );
}
