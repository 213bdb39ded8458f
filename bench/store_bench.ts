// Store indexing throughput: 10,000 ConfigMap-shaped objects across 50 namespaces, with the
// namespace index and one user index (by label). Each iteration handles N objects, so
// events/s = N × iter/s as reported by `deno bench` (single-threaded: per core).
//
//   deno bench bench/store_bench.ts
import { Store } from "../src/runtime/cache/store.ts";
import type { KubeObject } from "../src/core/object.ts";

const N = 10_000;

function object(i: number, rv = 1): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: `cm-${i}`,
      namespace: `ns-${i % 50}`,
      resourceVersion: String(rv),
      labels: { app: `app-${i % 100}`, tier: i % 2 ? "web" : "db" },
    },
  };
}

const objects = Array.from({ length: N }, (_, i) => object(i));
const updated = Array.from({ length: N }, (_, i) => object(i, 2));
const byApp = { app: (o: KubeObject) => [o.metadata.labels?.app ?? ""] };

function filled(): Store<KubeObject> {
  const store = new Store<KubeObject>({ indexes: byApp });
  for (const o of objects) store.upsert(o);
  return store;
}
const full = filled();

Deno.bench({
  name: `upsert new, namespace + label index (${N} events per iteration)`,
  group: "store",
  baseline: true,
  fn() {
    const store = new Store<KubeObject>({ indexes: byApp });
    for (const o of objects) store.upsert(o);
  },
});

Deno.bench({
  name: `upsert changed, namespace + label index (${N} events per iteration)`,
  group: "store",
  fn(b) {
    const store = filled();
    b.start();
    for (const o of updated) store.upsert(o);
    b.end();
  },
});

Deno.bench({
  name: `delete, namespace + label index (${N} events per iteration)`,
  group: "store",
  fn(b) {
    const store = filled();
    b.start();
    for (const o of objects) store.delete(o);
    b.end();
  },
});

Deno.bench({
  name: `get by key (${N} events per iteration)`,
  group: "store",
  fn() {
    for (let i = 0; i < N; i++) {
      if (!full.get(`ns-${i % 50}/cm-${i}`)) throw new Error("missing");
    }
  },
});

Deno.bench({
  name: `byIndex lookup, 100 objects each (${N} events per iteration)`,
  group: "store",
  fn() {
    let n = 0;
    for (let i = 0; i < N / 100; i++) n += full.byIndex("app", `app-${i % 100}`).length;
    if (n !== N) throw new Error(`Expected ${N} objects, got ${n}`);
  },
});

Deno.bench({
  name: `replace (relist diff), all changed (${N} events per iteration)`,
  group: "store",
  fn(b) {
    const store = filled();
    b.start();
    store.replace(updated, "2");
    b.end();
  },
});
