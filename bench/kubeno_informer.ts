// kubeno's informer-sync contender: informer() over the ConfigMaps of one namespace (with
// --metadata, over metadataOnly(ConfigMap): PartialObjectMetadata, no data). Measures
// time from start to synced and resident memory after sync minus before, both read from
// /proc/self/status VmRSS after a forced memory-reducing GC (as the Go and Node.js peers
// do), and the live JS heap after minus before.
//
//   deno run -A --v8-flags=--expose-gc bench/kubeno_informer.ts --kubeconfig FILE --namespace NS [--metadata]
//
// The harness runs it with the environment the generated Deployment sets
// (MALLOC_MMAP_THRESHOLD_=1048576, `DEPLOYED_ENV` in bench/_peers.ts).
//
// Prints one JSON line, then waits for SIGTERM so the harness can read peak RSS.
import { parseArgs } from "node:util";
import { createClient } from "../src/client/client.ts";
import { informer } from "../src/runtime/cache/informer.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import { metadataOnly } from "../src/core/metadata_only.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    kubeconfig: { type: "string" },
    namespace: { type: "string", default: "default" },
    metadata: { type: "boolean", default: false },
    // "list" (paged) or "watchList" (KEP-3157 streaming); the informer's default if absent.
    "initial-sync": { type: "string" },
    // Objects per list page (the informer's pageSize; 0 lists in one page).
    "page-size": { type: "string" },
  },
});
if (Deno.env.get("KUBENO_BENCH_WARMUP")) Deno.exit(0);

function memory(): { rssKiB: number; heapBytes: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("Cannot force a GC: run with --v8-flags=--expose-gc");
  // V8's memory-reducing full GC (shrinks the young generation, returns free pages): the
  // counterpart of the Go peers' runtime.GC + debug.FreeOSMemory.
  (gc as (o: object) => void)({ type: "major", execution: "sync", flavor: "last-resort" });
  const status = Deno.readTextFileSync("/proc/self/status");
  const rssKiB = Number(status.match(/^VmRSS:\s+(\d+)/m)![1]);
  return { rssKiB, heapBytes: Deno.memoryUsage().heapUsed };
}

const client = await createClient({ kubeconfig: args.kubeconfig });
const before = memory();
const initialSync = args["initial-sync"] as "list" | "watchList" | undefined;
const pageSize = args["page-size"] === undefined ? undefined : Number(args["page-size"]);
const options = { client, namespace: args.namespace, initialSync, pageSize };
const cms = args.metadata
  ? informer(metadataOnly(ConfigMap), options)
  : informer(ConfigMap, options);
const start = performance.now();
cms.start();
await cms.synced();
const syncMs = performance.now() - start;
const objects = cms.store.size;
const after = memory();
console.log(JSON.stringify({
  objects,
  syncMs,
  rssBeforeKiB: before.rssKiB,
  rssAfterKiB: after.rssKiB,
  bytesPerObject: ((after.rssKiB - before.rssKiB) * 1024) / Math.max(objects, 1),
  heapBytesPerObject: (after.heapBytes - before.heapBytes) / Math.max(objects, 1),
}));

await new Promise<void>((resolve) => Deno.addSignalListener("SIGTERM", () => resolve()));
await cms.stop();
client.close();
Deno.exit(0);
