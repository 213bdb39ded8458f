// The informer-sync peer on Node.js: @kubernetes/client-node's informer (makeInformer) over
// the ConfigMaps of one namespace. Measures time from start to synced (start() resolves after
// the initial list has filled the cache) and resident memory after sync minus before, both
// read from /proc/self/status VmRSS after a forced GC, and the live JS heap after minus before.
//
//   node --expose-gc index.mjs KUBECONFIG NAMESPACE
//
// Prints one JSON line, then waits for SIGTERM so the harness can read peak RSS.
import { readFileSync } from "node:fs";
import * as k8s from "@kubernetes/client-node";

const [kubeconfig, namespace] = process.argv.slice(2);

function memory() {
  // V8's memory-reducing full GC, as the kubeno contender (the Go peers: FreeOSMemory).
  globalThis.gc({ type: "major", execution: "sync", flavor: "last-resort" });
  const line = readFileSync("/proc/self/status", "utf8").split("\n").find((l) =>
    l.startsWith("VmRSS:")
  );
  return { rssKiB: Number(line.split(/\s+/)[1]), heapBytes: process.memoryUsage().heapUsed };
}

const kc = new k8s.KubeConfig();
kc.loadFromFile(kubeconfig);
const core = kc.makeApiClient(k8s.CoreV1Api);
const before = memory();

const informer = k8s.makeInformer(
  kc,
  `/api/v1/namespaces/${namespace}/configmaps`,
  () => core.listNamespacedConfigMap({ namespace }),
);
informer.on("error", (err) => console.error("node-informer:", err?.message ?? err));
const start = performance.now();
await informer.start();
const syncMs = performance.now() - start;
const objects = informer.list(namespace).length;
const after = memory();
console.log(JSON.stringify({
  objects,
  syncMs,
  rssBeforeKiB: before.rssKiB,
  rssAfterKiB: after.rssKiB,
  bytesPerObject: ((after.rssKiB - before.rssKiB) * 1024) / Math.max(objects, 1),
  heapBytesPerObject: (after.heapBytes - before.heapBytes) / Math.max(objects, 1),
}));

process.on("SIGTERM", async () => {
  await informer.stop();
  process.exit(0);
});
