// watch() against a real kube-apiserver + etcd on loopback (one control plane for the file),
// with a fault proxy in front where the test needs the network to fail.
import assert from "node:assert/strict";
import { type ControlPlane, startControlPlane } from "../testing.ts";
import { type Client, createClient } from "../src/client.ts";
import { startFaultProxy } from "../src/fault_proxy.ts";
import { ConfigMap, Namespace } from "../src/kinds.ts";
import type { KubeObject } from "../src/object.ts";
import { resource } from "../src/resource.ts";
import { objectKey } from "../src/store.ts";
import { watch, type WatchEvent, type WatchStream } from "../src/watch.ts";
import { WatchError } from "../src/watch_error.ts";
import { uniqueName, waitFor } from "./_helpers.ts";

// One control plane for the file: the steps below run inside one test that owns it.
let cp: ControlPlane;
let admin: Client;
const steps: [string, () => Promise<void>][] = [];
const step = (name: string, fn: () => Promise<void>) => void steps.push([name, fn]);

Deno.test("watch() against a real API server", async (t) => {
  await using plane = await startControlPlane();
  using client = await createClient({ kubeconfig: plane.kubeconfigPath });
  cp = plane;
  admin = client;
  for (const [name, fn] of steps) await t.step(name, fn);
});

async function namespace(): Promise<string> {
  const name = uniqueName("w");
  await admin.create(Namespace, { metadata: { name } });
  return name;
}

/** Consumes a stream in the background into a view, the way an informer would. */
function consume<T extends KubeObject>(stream: WatchStream<T>) {
  const events: WatchEvent<T>[] = [];
  const view = new Map<string, T>();
  const state: { error?: unknown; done: boolean } = { done: false };
  const done = (async () => {
    try {
      for await (const ev of stream) {
        events.push(ev);
        if (ev.type === "relisted") {
          view.clear();
          for (const o of ev.objects) view.set(objectKey(o), o);
        } else if (ev.type === "added" || ev.type === "modified") {
          view.set(objectKey(ev.object), ev.object);
        } else if (ev.type === "deleted") view.delete(objectKey(ev.object));
      }
    } catch (err) {
      state.error = err;
    } finally {
      state.done = true;
    }
  })();
  return { events, view, state, done };
}

/** `key@resourceVersion` of every object, sorted: equal iff two views agree. */
function fingerprint(objs: Iterable<KubeObject>): string[] {
  return [...objs].map((o) => `${objectKey(o)}@${o.metadata.resourceVersion}`).sort();
}

async function freshList(client: Client, ns: string): Promise<string[]> {
  return fingerprint((await client.list(ConfigMap, { namespace: ns })).items);
}

step("watch() streams changes in order and ends on abort", async () => {
  const ns = await namespace();
  await admin.create(ConfigMap, { metadata: { name: "a", namespace: ns }, data: { v: "1" } });
  const ctl = new AbortController();
  const stream = watch(ConfigMap, { client: admin, namespace: ns, signal: ctl.signal });
  const c = consume(stream);
  await waitFor(() => stream.stats.state === "watching", { what: "the watch" });
  await admin.create(ConfigMap, { metadata: { name: "b", namespace: ns } });
  await admin.patch(ConfigMap, "a", { data: { v: "2" } }, { namespace: ns });
  await admin.delete(ConfigMap, "b", { namespace: ns });
  await waitFor(() => c.events.length >= 4, { what: "4 events" });
  assert.deepEqual(
    c.events.map((e) =>
      e.type === "relisted"
        ? `relisted ${e.objects.length}`
        : "object" in e
        ? `${e.type} ${e.object.metadata.name}`
        : e.type
    ),
    ["relisted 1", "added b", "modified a", "deleted b"],
  );
  assert.deepEqual(fingerprint(c.view.values()), await freshList(admin, ns));
  ctl.abort();
  await c.done;
  assert.equal(c.state.error, undefined);
  assert.equal(stream.stats.maxOpenRequests, 1);
});

step(
  "watch() detects a stalled watch through the proxy and restarts it, one watch at a time",
  async () => {
    const ns = await namespace();
    await using proxy = await startFaultProxy({ target: cp.server });
    using client = await createClient({
      kubeconfig: await cp.writeKubeconfig({ server: proxy.url }),
    });
    const ctl = new AbortController();
    const stream = watch(ConfigMap, {
      client,
      namespace: ns,
      signal: ctl.signal,
      stallTimeoutMs: 2_000,
      backoff: { initialMs: 200, maxMs: 1_000 },
    });
    const c = consume(stream);
    let maxProxyConns = 0;
    const sampler = setInterval(
      () => maxProxyConns = Math.max(maxProxyConns, proxy.openConnections),
      5,
    );
    // A heartbeat through the admin client keeps events flowing, so that only the proxy's
    // stall can starve the watch.
    let beats = 0;
    const heartbeat = setInterval(() => {
      const n = ++beats;
      admin.apply(ConfigMap, {
        metadata: { name: "heartbeat", namespace: ns },
        data: { n: String(n) },
      })
        .catch(() => {});
    }, 250);
    try {
      await waitFor(() => c.view.get(`${ns}/heartbeat`)?.data?.n !== undefined && beats >= 12, {
        what: "3 s of heartbeats",
      });
      assert.equal(stream.stats.stalls, 0, "a watch with traffic is not stalled");
      proxy.stall(true);
      await waitFor(() => stream.stats.stalls >= 1, { what: "the watchdog", timeoutMs: 10_000 });
      assert.equal(stream.stats.error?.reason, "Stalled");
      assert.match(
        stream.stats.error!.message,
        /^Cannot watch ConfigMap \(v1\) in namespace "w-[0-9a-f]+": no event or bookmark arrived within 2000 ms \(stalled\)$/,
      );
      const stalledAt = beats;
      proxy.stall(false);
      await waitFor(() => Number(c.view.get(`${ns}/heartbeat`)?.data?.n) > stalledAt + 2, {
        what: "the restarted watch to deliver heartbeats",
      });
      assert.equal(stream.stats.error, undefined, "recovered");
    } finally {
      clearInterval(heartbeat);
      clearInterval(sampler);
    }
    assert.equal(stream.stats.lists, 1, "resumed from the last resourceVersion, no relist");
    assert.equal(stream.stats.maxOpenRequests, 1);
    assert.ok(
      maxProxyConns <= 2,
      `at most one watch connection (plus a list's), saw ${maxProxyConns}`,
    );
    assert.deepEqual(fingerprint(c.view.values()), await freshList(admin, ns));
    console.log(
      `stall: ${stream.stats.stalls} stalls, ${stream.stats.watchRequests} watch requests, ` +
        `${proxy.acceptedConnections} connections accepted, at most ${maxProxyConns} open`,
    );
    ctl.abort();
    await c.done;
  },
);

step("watch() resumes without relisting after the proxy drops every connection", async () => {
  const ns = await namespace();
  await using proxy = await startFaultProxy({ target: cp.server });
  using client = await createClient({
    kubeconfig: await cp.writeKubeconfig({ server: proxy.url }),
  });
  const ctl = new AbortController();
  const stream = watch(ConfigMap, { client, namespace: ns, signal: ctl.signal });
  const c = consume(stream);
  await waitFor(() => stream.stats.state === "watching");
  for (let i = 0; i < 3; i++) {
    await admin.create(ConfigMap, { metadata: { name: `cm-${i}`, namespace: ns } });
    await waitFor(() => c.view.has(`${ns}/cm-${i}`));
    const before = stream.stats.watchRequests;
    assert.ok(proxy.dropAll() >= 1);
    await admin.create(ConfigMap, { metadata: { name: `after-${i}`, namespace: ns } });
    await waitFor(() => c.view.has(`${ns}/after-${i}`), { what: "the change made while dropped" });
    assert.ok(stream.stats.watchRequests > before);
  }
  assert.equal(stream.stats.lists, 1);
  const added = c.events.filter((e) => e.type === "added").length;
  assert.equal(added, 6, "no change lost or repeated");
  assert.deepEqual(fingerprint(c.view.values()), await freshList(admin, ns));
  ctl.abort();
  await c.done;
});

step("watch() backs off without a reconnect storm while the API server is down", async () => {
  const ns = await namespace();
  await using proxy = await startFaultProxy({ target: cp.server });
  using client = await createClient({
    kubeconfig: await cp.writeKubeconfig({ server: proxy.url }),
  });
  const ctl = new AbortController();
  const stream = watch(ConfigMap, {
    client,
    namespace: ns,
    signal: ctl.signal,
    backoff: { initialMs: 200, maxMs: 1_000 },
  });
  const c = consume(stream);
  await waitFor(() => stream.stats.state === "watching");
  await cp.stopApiServer();
  let window: { accepted: number; ms: number };
  try {
    await waitFor(() => stream.stats.failures >= 2, { what: "failed reconnects" });
    // Count connection attempts over a 5 s window. Backoff (200 ms doubling to 1 s) allows
    // about 7; a storm would make hundreds.
    const start = proxy.acceptedConnections;
    const t0 = performance.now();
    await waitFor(() => performance.now() - t0 >= 5_000, { timeoutMs: 10_000 });
    window = { accepted: proxy.acceptedConnections - start, ms: performance.now() - t0 };
  } finally {
    await cp.startApiServer();
  }
  console.log(`down: ${window.accepted} connection attempts in ${Math.round(window.ms)} ms`);
  assert.ok(window.accepted >= 2 && window.accepted <= 12, `saw ${window.accepted} attempts`);
  const errors = c.events.filter((e) => e.type === "error");
  assert.ok(errors.length <= 2, `one error event per state change, saw ${errors.length}`);
  await admin.create(ConfigMap, { metadata: { name: "after", namespace: ns } });
  await waitFor(() => c.view.has(`${ns}/after`), { what: "recovery" });
  assert.equal(stream.stats.error, undefined);
  assert.deepEqual(fingerprint(c.view.values()), await freshList(admin, ns));
  ctl.abort();
  await c.done;
});

step(
  "watch() throws a one-line WatchError for an unknown resource and a forbidden list",
  async () => {
    const Widget = resource({ group: "example.com", version: "v1", kind: "Widget" });
    const unknown = consume(watch(Widget, { client: admin }));
    await unknown.done;
    assert.ok(unknown.state.error instanceof WatchError);
    assert.equal(unknown.state.error.persistent, true);
    assert.equal(unknown.state.error.code, 404);
    assert.doesNotMatch(unknown.state.error.message, /\n/);
    assert.match(unknown.state.error.message, /widgets/);
    console.log(`unknown: ${unknown.state.error.message}`);

    const ns = await namespace();
    using bob = await createClient({ kubeconfig: await cp.createUser("bob") });
    const forbidden = consume(watch(ConfigMap, { client: bob, namespace: ns }));
    await forbidden.done;
    assert.ok(forbidden.state.error instanceof WatchError);
    assert.equal(forbidden.state.error.code, 403);
    assert.doesNotMatch(forbidden.state.error.message, /\n/);
    assert.match(forbidden.state.error.message, /configmaps/);
    assert.match(forbidden.state.error.message, /bob/);
    console.log(`forbidden: ${forbidden.state.error.message}`);
  },
);
