import assert from "node:assert/strict";
import { InformerReader } from "./reader.ts";
import { type Informer, informer } from "./informer.ts";
import { resource } from "../../core/resource.ts";
import { metadataOnly } from "../../core/metadata_only.ts";
import type { KubeObject } from "../../core/object.ts";
import type { WatchClient } from "../watch/watch.ts";

const ConfigMap = resource<KubeObject & { data?: Record<string, string> }>({
  group: "",
  version: "v1",
  kind: "ConfigMap",
});
const Node = resource({ group: "", version: "v1", kind: "Node", namespaced: false });
const Secret = resource({ group: "", version: "v1", kind: "Secret" });

const cm = (namespace: string, name: string, labels: Record<string, string> = {}) => ({
  metadata: { name, namespace, labels, resourceVersion: "1" },
  data: { owner: labels.owner ?? "" },
});

/** A started, synced informer over `items` (a stand-in client; no watch events). */
async function synced<T extends KubeObject>(
  res: Parameters<typeof informer<T>>[0],
  items: KubeObject[],
  options: { namespace?: string; indexes?: Record<string, (o: T) => string[]> } = {},
): Promise<Informer<T>> {
  const client: WatchClient = {
    list: <U>(_r: unknown, o: { namespace?: string }) =>
      Promise.resolve({
        metadata: { resourceVersion: "1" },
        items: structuredClone(
          items.filter((i) => !o.namespace || i.metadata.namespace === o.namespace),
        ) as U[],
      }),
    watchEvents: () => (async function* () {})(),
  };
  const inf = informer(res, { client, ...options }).start();
  await inf.synced();
  return inf;
}

Deno.test("InformerReader: get and list by namespace, labels and index, frozen", async () => {
  const items = [
    cm("a", "one", { owner: "x", tier: "web" }),
    cm("a", "two", { owner: "y", tier: "web" }),
    cm("b", "three", { owner: "x", tier: "db" }),
  ];
  await using cms = await synced(ConfigMap, items, {
    indexes: {
      "ctl/byOwner": (o) => [o.data?.owner ?? ""],
      "ctl/byTier": (o) => [o.metadata.labels?.tier ?? ""],
    },
  });
  const reader = new InformerReader([{
    resource: ConfigMap,
    informers: [cms],
    indexes: { byOwner: "ctl/byOwner", byTier: "ctl/byTier" },
  }], { owner: `controller "ctl"` });
  const names = (xs: KubeObject[]) => xs.map((x) => x.metadata.name).sort();

  assert.equal(reader.get(ConfigMap, "one", { namespace: "a" })?.metadata.name, "one");
  assert.equal(reader.get(ConfigMap, "one", { namespace: "b" }), undefined);
  assert.deepEqual(names(reader.list(ConfigMap)), ["one", "three", "two"]);
  assert.deepEqual(names(reader.list(ConfigMap, { namespace: "a" })), ["one", "two"]);
  assert.deepEqual(names(reader.list(ConfigMap, { labelSelector: "tier=web" })), ["one", "two"]);
  assert.deepEqual(names(reader.list(ConfigMap, { labelSelector: { tier: "db" } })), ["three"]);
  assert.deepEqual(names(reader.list(ConfigMap, { index: { byOwner: "x" } })), ["one", "three"]);
  assert.deepEqual(
    names(reader.list(ConfigMap, { index: { byOwner: "x" }, namespace: "b" })),
    ["three"],
  );
  assert.deepEqual(
    names(reader.list(ConfigMap, { index: { byOwner: "x", byTier: "web" } })),
    ["one"],
  );
  assert.deepEqual(reader.list(ConfigMap, { index: { byOwner: "nobody" } }), []);

  const got = reader.get(ConfigMap, "one", { namespace: "a" })!;
  assert.ok(
    Object.isFrozen(got) && Object.isFrozen(got.metadata.labels) && Object.isFrozen(got.data),
  );
  assert.throws(() => {
    (got.data as Record<string, string>).owner = "z";
  }, TypeError);
  assert.equal(reader.get(ConfigMap, "one", { namespace: "a" })?.data?.owner, "x");

  assert.throws(
    () => reader.list(ConfigMap, { index: { byName: "x" } }),
    {
      name: "TypeError",
      message:
        `Cannot list ConfigMap by index "byName" from the cache of controller "ctl": no such index; declared: "byOwner", "byTier"`,
    },
  );
});

Deno.test("InformerReader: default namespace, one informer per namespace, errors", async () => {
  await using a = await synced(ConfigMap, [cm("a", "one")], { namespace: "a" });
  await using b = await synced(ConfigMap, [cm("b", "two")], { namespace: "b" });
  await using nodes = await synced(Node, [{ metadata: { name: "n1", resourceVersion: "1" } }]);
  const reader = new InformerReader([
    { resource: ConfigMap, informers: [a, b], namespaces: ["a", "b"] },
    { resource: Node, informers: [nodes] },
  ], { owner: "a test", hint: () => "add it to reads" });

  assert.equal(reader.list(ConfigMap).length, 2);
  assert.equal(reader.list(ConfigMap, { namespace: "b" })[0].metadata.name, "two");
  assert.equal(reader.get(Node, "n1")?.metadata.name, "n1");
  assert.equal(reader.get(Node, "n1", { namespace: "ignored" })?.metadata.name, "n1");
  assert.throws(() => reader.get(ConfigMap, "one"), {
    message: `Cannot read ConfigMap "one" from the cache of a test: no namespace given`,
  });
  assert.equal(reader.withDefaultNamespace("a").get(ConfigMap, "one")?.metadata.name, "one");
  assert.throws(() => reader.list(ConfigMap, { namespace: "c" }), {
    message:
      `Cannot read ConfigMap in namespace "c" from the cache of a test: it is cached only in "a", "b"`,
  });
  assert.throws(() => reader.get(Secret, "s", { namespace: "a" }), {
    name: "TypeError",
    message:
      "Cannot read Secret (v1) from the cache of a test: it is not declared; add it to reads",
  });
  assert.throws(() => reader.list(metadataOnly(ConfigMap)), {
    message:
      "Cannot read ConfigMap (v1) from the cache of a test metadata-only: it is cached in full; read ConfigMap itself, or declare metadataOnly(ConfigMap)",
  });
  assert.throws(
    () =>
      new InformerReader([{ resource: Node, informers: [] }, { resource: Node, informers: [] }], {
        owner: "x",
      }),
    { message: "Cannot create a cache reader for x: Node is given twice" },
  );
});

Deno.test("InformerReader: a metadata-only kind is read through its view", async () => {
  const Meta = metadataOnly(ConfigMap);
  await using metas = await synced(Meta, [{
    metadata: { name: "m", namespace: "a", resourceVersion: "1" },
  }]);
  const reader = new InformerReader([{ resource: Meta, informers: [metas] }], { owner: "t" });
  assert.equal(reader.get(Meta, "m", { namespace: "a" })?.metadata.name, "m");
  assert.throws(() => reader.list(ConfigMap), {
    message:
      "Cannot read ConfigMap (v1) from the cache of t: it is cached metadata-only; read metadataOnly(ConfigMap), or declare ConfigMap itself",
  });
});
