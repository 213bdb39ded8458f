import assert from "node:assert/strict";
import { ControllerRuntime } from "./controller.ts";
import type { Client } from "./client.ts";
import { InformerFactory } from "./informer_factory.ts";
import type { KubeObject } from "./object.ts";
import { generationChanged } from "./predicates.ts";
import { reconcile, requeue } from "./reconcile.ts";
import { type Resource, resource } from "./resource.ts";
import type { WatchClient } from "./watch.ts";
import { FakeApi } from "./_fake_api.ts";

const Stack = resource({ group: "x.kubeno.dev", version: "v1", kind: "Stack" });
const Child = resource({ group: "", version: "v1", kind: "ConfigMap" });
const Other = resource({ group: "", version: "v1", kind: "Secret" });

/** One FakeApi per kind behind one WatchClient. */
function fakeCluster() {
  const apis = new Map<string, FakeApi>();
  const api = (res: Resource<any>) => {
    if (!apis.has(res.kind)) apis.set(res.kind, new FakeApi());
    return apis.get(res.kind)!;
  };
  const client: WatchClient = {
    list: (res, o) => api(res).list(res, o),
    watchEvents: (res, o) => api(res).watchEvents(res, o),
  };
  return { api, client };
}

function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  return new Promise((resolve, reject) => {
    const check = () => {
      if (cond()) return resolve();
      if (Date.now() > deadline) return reject(new Error(`Timed out waiting for ${what}`));
      setTimeout(check, 2);
    };
    check();
  });
}

const obj = (name: string, extra: Partial<KubeObject["metadata"]> = {}): KubeObject => ({
  metadata: { name, namespace: "ns", uid: `uid-${name}`, ...extra },
});

Deno.test("ControllerRuntime maps owned and watched objects to primaries, after sync only", async () => {
  const { api, client } = fakeCluster();
  api(Stack).put({ apiVersion: "x.kubeno.dev/v1", kind: "Stack", ...obj("a") });
  api(Stack).put({ apiVersion: "x.kubeno.dev/v1", kind: "Stack", ...obj("b") });
  const seen: string[] = [];
  let gate = Promise.resolve();
  const controller = reconcile(Stack, {
    owns: [Child],
    watches: [{
      resource: Other,
      map: (s) => [{ name: s.metadata.name!.slice(4), namespace: "ns" }],
    }],
    async reconcile(_o, ctx) {
      seen.push(ctx.key);
      await gate;
    },
  });
  await using informers = new InformerFactory({ client });
  const runtime = new ControllerRuntime(controller, { client: {} as Client, informers });
  assert.equal(runtime.informers.length, 3);
  informers.start();
  await until(() => runtime.queue.len() === 2, "the initial list to be queued");
  assert.deepEqual(seen, [], "reconciled before start");
  await runtime.start();
  await until(() => seen.length === 2, "initial reconciles");

  const ref = (kind: string, name: string, controller: boolean) => ({
    apiVersion: kind === "Stack" ? "x.kubeno.dev/v1" : "v1",
    kind,
    name,
    uid: `uid-${name}`,
    controller,
  });
  api(Child).put(obj("c1", { ownerReferences: [ref("Stack", "a", true)] }));
  api(Child).put(obj("c2", { ownerReferences: [ref("Stack", "b", false)] })); // not controller
  api(Child).put(obj("c3", { ownerReferences: [ref("Deployment", "b", true)] })); // other kind
  api(Other).put(obj("for-b"));
  await until(() => seen.length === 4, "owned and watched events");
  assert.deepEqual(seen.slice(2).sort(), ["ns/a", "ns/b"]);

  // A key that is gone from the cache is not reconciled.
  let release!: () => void;
  gate = new Promise((r) => release = r);
  api(Stack).put({
    apiVersion: "x.kubeno.dev/v1",
    kind: "Stack",
    ...obj("a", { labels: { x: "1" } }),
  });
  await until(() => seen.length === 5, "a to be reconciled");
  api(Stack).remove("ns/b"); // queued while a is being reconciled
  api(Child).put(obj("c4", { ownerReferences: [ref("Stack", "b", true)] }));
  await until(() => runtime.queue.len() === 1, "b to be queued");
  release();
  assert.ok(await runtime.stop(1_000));
  assert.deepEqual(seen.slice(4), ["ns/a"]);
});

Deno.test("ControllerRuntime applies predicates, requeues, and stops taking work", async () => {
  const { api, client } = fakeCluster();
  const calls: number[] = [];
  const controller = reconcile(Stack, {
    predicates: [generationChanged],
    reconcile(o) {
      calls.push(o.metadata.generation ?? 0);
      return calls.length === 1 ? requeue(1) : undefined;
    },
  });
  await using informers = new InformerFactory({ client });
  const runtime = new ControllerRuntime(controller, {
    client: {} as Client,
    informers,
    namespaces: ["ns"],
  });
  informers.start();
  await runtime.start();
  api(Stack).put({ ...obj("a", { generation: 1 }) });
  await until(() => calls.length === 2, "the create and the requeue");
  api(Stack).put({ ...obj("a", { generation: 1, labels: { a: "b" } }) }); // filtered
  api(Stack).put({ ...obj("a", { generation: 2 }) });
  await until(() => calls.length === 3, "the spec change");
  assert.deepEqual(calls, [1, 1, 2]);
  assert.ok(runtime.running);
  assert.ok(await runtime.stop(1_000));
  assert.ok(!runtime.running);
  api(Stack).put({ ...obj("a", { generation: 3 }) });
  assert.equal(runtime.queue.len(), 0, "queued after stop");
});
