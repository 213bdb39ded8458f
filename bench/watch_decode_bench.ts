// Watch-event decoding throughput: 10,000 ConfigMap watch events (~1.4 KiB of JSON each,
// managedFields included, as the API server sends them) split into 16 KiB chunks.
//
//   ndjson          bytes to objects (parseNdjson, what Client.watchEvents runs)
//   informer        bytes to objects, into an informer (managedFields stripped, store
//                   updated, onAdd called): the whole per-event path behind a watch
//
// Each iteration decodes N events, so events/s = N × iter/s as reported by `deno bench`
// (single-threaded: per core).
//
//   deno bench bench/watch_decode_bench.ts
import { parseNdjson } from "../src/client/_ndjson.ts";
import { informer } from "../src/runtime/cache/informer.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import type { KubeObject } from "../src/core/object.ts";
import type { WatchClient } from "../src/runtime/watch/watch.ts";

const N = 10_000;
const CHUNK = 16 * 1024;
const filler = "x".repeat(1_000);

const wire = new TextEncoder().encode(
  Array.from({ length: N }, (_, i) =>
    JSON.stringify({
      type: "ADDED",
      object: {
        kind: "ConfigMap",
        apiVersion: "v1",
        metadata: {
          name: `cm-${i}`,
          namespace: "bench",
          uid: crypto.randomUUID(),
          resourceVersion: String(1000 + i),
          creationTimestamp: "2026-01-01T00:00:00Z",
          managedFields: [{
            manager: "kubeno",
            operation: "Update",
            apiVersion: "v1",
            time: "2026-01-01T00:00:00Z",
            fieldsType: "FieldsV1",
            fieldsV1: { "f:data": { ".": {}, "f:filler": {}, "f:i": {} } },
          }],
        },
        data: { i: String(i), filler },
      },
    }) + "\n").join(""),
);
const chunks: Uint8Array[] = [];
for (let off = 0; off < wire.length; off += CHUNK) chunks.push(wire.subarray(off, off + CHUNK));

async function* stream(): AsyncGenerator<Uint8Array> {
  for (const c of chunks) yield c;
}

Deno.bench({
  name: `ndjson: bytes to watch events (${N} events per iteration)`,
  group: "watch-decode",
  baseline: true,
  async fn() {
    let n = 0;
    for await (const _ of parseNdjson(stream())) n++;
    if (n !== N) throw new Error(`Expected ${N} events, got ${n}`);
  },
});

// A client whose list is empty and whose one watch replays the bytes, then stays open.
function replayClient(): WatchClient {
  return {
    list: () => Promise.resolve({ metadata: { resourceVersion: "1" }, items: [] }),
    watchEvents: <T extends KubeObject>(_: unknown, o: { signal?: AbortSignal }) =>
      (async function* () {
        yield* parseNdjson(stream()) as AsyncIterable<any>;
        await new Promise((resolve) => o.signal?.addEventListener("abort", resolve));
      })() as AsyncIterable<any> as AsyncIterable<T & any>,
    closeIdleConnections: () => {},
  } as unknown as WatchClient;
}

Deno.bench({
  name: `informer: bytes to store + handler (${N} events per iteration)`,
  group: "watch-decode",
  async fn() {
    const cms = informer(ConfigMap, { client: replayClient() });
    const all = Promise.withResolvers<void>();
    let n = 0;
    cms.onEvent((ev) => {
      if (ev.type === "added" && ++n === N) all.resolve();
    });
    cms.start();
    await all.promise;
    await cms.stop();
  },
});
