// watch() against a real kube-apiserver + etcd on loopback (one control plane for the file),
// with a fault proxy in front where the test needs the network to fail, and real faults
// (compaction, restarts) timed by a recording client where the test needs 410 Gone.
import assert from "node:assert/strict";
import { type ControlPlane, startControlPlane } from "../testing.ts";
import { sharedPlane } from "./_plane.ts";
import { type Client, createClient } from "../src/client/client.ts";
import { ApiError } from "../src/client/errors/api_error.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";
import type { KubeObject } from "../src/core/object.ts";
import { resource } from "../src/core/resource.ts";
import { objectKey } from "../src/core/object_key.ts";
import { watch, type WatchEvent, type WatchStream } from "../src/runtime/watch/watch.ts";
import { WatchError } from "../src/runtime/watch/watch_error.ts";
import { Role, RoleBinding } from "../src/core/kinds_cluster.ts";
import { recordingClient, uniqueName, viaFaultProxy, waitFor } from "./_helpers.ts";

let cp: ControlPlane, admin: Client; // the file's one control plane, for every step below
const { step, namespace } = sharedPlane(
  "watch() against a real API server",
  "w",
  (p, c) => [cp, admin] = [p, c],
);

/** Consumes a stream in the background into a view, the way an informer would. */
function consume<T extends KubeObject>(stream: WatchStream<T>) {
  const events: WatchEvent<T>[] = [];
  // The stream's resourceVersion as each event reached the consumer.
  const tracked: (string | undefined)[] = [];
  const view = new Map<string, T>();
  const state: { error?: unknown; done: boolean } = { done: false };
  const done = (async () => {
    try {
      for await (const ev of stream) {
        events.push(ev);
        tracked.push(stream.stats.resourceVersion);
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
  return { events, tracked, view, state, done };
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
    await using via = await viaFaultProxy(cp);
    const { proxy, client } = via;
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
      await waitFor(() => stream.stats.stalls >= 1, { what: "the watchdog" });
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
  await using via = await viaFaultProxy(cp);
  const { proxy, client } = via;
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

step(
  "watch() backs off without a reconnect storm while the API server is down; abort ends a backoff",
  async () => {
    const ns = await namespace();
    await using via = await viaFaultProxy(cp);
    const { proxy, client } = via;
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

      // A second stream, waiting out a long backoff, ends at once when aborted.
      // A fresh client straight to the stopped server: connections are refused at once.
      using direct = await createClient({ kubeconfig: cp.kubeconfigPath });
      const ctl2 = new AbortController();
      const waiting = watch(ConfigMap, {
        client: direct,
        namespace: ns,
        signal: ctl2.signal,
        backoff: { initialMs: 600_000, maxMs: 600_000, jitter: 0 },
      });
      const w = consume(waiting);
      await waitFor(() => waiting.stats.state === "backoff", {
        what: "the second stream's backoff",
      });
      const refused = w.events.find((e) => e.type === "error")?.error;
      assert.equal(refused?.reason, "ConnectionFailed");
      assert.equal(refused?.persistent, false);
      assert.ok(
        refused?.message.startsWith(
          `Cannot list ConfigMap (v1) in namespace "${ns}" from Kubernetes API server "${cp.server}": `,
        ),
        refused?.message,
      );
      assert.doesNotMatch(refused!.message, /\n/);
      ctl2.abort();
      await waitFor(() => w.state.done, {
        what: "the aborted stream to end during its 10-minute backoff",
        timeoutMs: 120_000, // far below the backoff: only an abort ends the wait this soon
      });
      assert.equal(w.state.error, undefined);
      assert.equal(waiting.stats.state, "stopped");
      assert.equal(waiting.stats.openRequests, 0);
      assert.throws(() => waiting[Symbol.asyncIterator](), TypeError);
    } finally {
      await cp.startApiServer();
    }
    console.log(`down: ${window.accepted} connection attempts in ${Math.round(window.ms)} ms`);
    assert.ok(window.accepted >= 2 && window.accepted <= 12, `saw ${window.accepted} attempts`);
    // The outage is reported (at least once), and each error event is a change of state:
    // repeated failures of the same kind (failures >= 2 above) are not reported again.
    const errors = c.events.filter((e) => e.type === "error").map((e) => e.error);
    const seen = errors.map((e) => `${e.code} ${e.reason}`);
    assert.ok(errors.length >= 1 && errors.length <= 2, `error events: ${seen.join("; ")}`);
    seen.slice(1).forEach((s, i) => assert.notEqual(s, seen[i], `repeated: ${seen.join("; ")}`));
    await admin.create(ConfigMap, { metadata: { name: "after", namespace: ns } });
    await waitFor(() => c.view.has(`${ns}/after`), { what: "recovery" });
    assert.equal(stream.stats.error, undefined);
    assert.deepEqual(fingerprint(c.view.values()), await freshList(admin, ns));
    ctl.abort();
    await c.done;
  },
);

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

step(
  "watch() lists in pages with apiVersion/kind on items, then watches from the list's version",
  async () => {
    const ns = await namespace();
    for (const n of ["a", "b", "c", "d", "e"]) {
      await admin.create(ConfigMap, { metadata: { name: n, namespace: ns } });
    }
    const rec = recordingClient(admin);
    const ctl = new AbortController();
    const stream = watch(ConfigMap, {
      client: rec.client,
      namespace: ns,
      initialSync: "list", // paging is what this step tests
      pageSize: 2,
      signal: ctl.signal,
    });
    const c = consume(stream);
    await waitFor(() => rec.openWatches === 1, { what: "the watch" });
    assert.deepEqual(rec.lists.map((l) => l.limit), [2, 2, 2]);
    assert.equal(rec.lists[0].continue, undefined);
    assert.ok(rec.lists[1].continue && rec.lists[2].continue);
    const first = c.events[0];
    assert.equal(first.type, "relisted");
    assert.equal(first.objects.length, 5);
    assert.ok(first.objects.every((o) => o.kind === "ConfigMap" && o.apiVersion === "v1"));
    const [w] = rec.watches;
    assert.equal(w.options.resourceVersion, first.resourceVersion);
    assert.equal(w.options.allowWatchBookmarks, true);
    const timeout = w.options.timeoutSeconds as number;
    assert.ok(timeout >= 300 && timeout < 600, `timeoutSeconds ${timeout}`);
    await admin.create(ConfigMap, { metadata: { name: "f", namespace: ns } });
    await waitFor(() => c.view.has(`${ns}/f`), { what: "the created object" });
    const added = c.events.at(-1) as { type: string; object: KubeObject };
    assert.equal(added.object.kind, "ConfigMap");
    assert.equal(stream.stats.resourceVersion, added.object.metadata.resourceVersion);
    ctl.abort();
    await c.done;
    assert.equal(c.state.error, undefined);
    assert.equal(stream.stats.state, "stopped");
    assert.equal(stream.stats.openRequests, 0);
    await waitFor(() => rec.openWatches === 0, { what: "the watch request to be released" });
  },
);

step(
  "watch() resumes after server-side timeouts from the last resourceVersion; bookmarks advance it",
  async () => {
    const ns = await namespace();
    const noise = await namespace();
    const rec = recordingClient(admin);
    const ctl = new AbortController();
    // The server ends each watch after 3 s, sending a bookmark 2 s before that.
    const stream = watch(ConfigMap, {
      client: rec.client,
      namespace: ns,
      timeoutSeconds: 3,
      signal: ctl.signal,
    });
    const c = consume(stream);
    await waitFor(() => stream.stats.state === "watching", { what: "the watch" });
    // Changes in the watched namespace, and elsewhere (which only bookmarks reveal), keep
    // coming while watches end and resume.
    let created = 0;
    let inNs = true;
    let stop = false;
    const writing = (async () => {
      for (let i = 0; !stop; i++) {
        if (inNs) {
          await admin.create(ConfigMap, { metadata: { name: `cm-${i}`, namespace: ns } });
          created++;
        }
        await admin.create(ConfigMap, { metadata: { name: `cm-${i}`, namespace: noise } });
        await pace();
      }
    })();
    const bookmarks = () => c.events.filter((e) => e.type === "bookmark");
    try {
      await waitFor(() => rec.watches.length >= 4 && bookmarks().length >= 2, {
        what: "3 server-side timeouts and 2 bookmarks",
        timeoutMs: 60_000,
      });
      // Now only bookmarks tell the stream about the versions passing by: a later watch
      // resumes from one of them, past the namespace's last change.
      inNs = false;
      await waitFor(() => c.view.size === created, { what: "every created object" });
      const lastChange = Math.max(
        ...c.events.map((e) => "object" in e ? Number(e.object.metadata.resourceVersion) : 0),
      );
      await waitFor(
        () =>
          rec.watches.some((w) =>
            Number(w.options.resourceVersion) > lastChange &&
            bookmarks().some((b) =>
              b.type === "bookmark" && b.resourceVersion === w.options.resourceVersion
            )
          ),
        { what: "a watch resumed from a bookmark", timeoutMs: 30_000 },
      );
    } finally {
      stop = true;
      await writing;
    }
    // Each watch resumed from the last resourceVersion the previous one delivered.
    for (let i = 1; i < rec.watches.length; i++) {
      const prev = rec.watches[i - 1];
      if (prev.lastResourceVersion === undefined) continue;
      assert.equal(rec.watches[i].options.resourceVersion, prev.lastResourceVersion, `watch ${i}`);
    }
    // The stream tracked every bookmark's version as it delivered it.
    for (const [i, e] of c.events.entries()) {
      if (e.type === "bookmark") assert.equal(c.tracked[i], e.resourceVersion);
    }
    const names = c.events.flatMap((e) => e.type === "added" ? [e.object.metadata.name] : []);
    assert.equal(names.length, created, "no change lost or repeated");
    assert.equal(new Set(names).size, created);
    assert.equal(stream.stats.lists, 1, "resumed without relisting");
    assert.equal(stream.stats.failures, 0);
    assert.equal(stream.stats.maxOpenRequests, 1);
    assert.deepEqual(fingerprint(c.view.values()), await freshList(admin, ns));
    console.log(
      `timeouts: ${rec.watches.length} watch requests, ${created} changes, ` +
        `${bookmarks().length} bookmarks`,
    );
    ctl.abort();
    await c.done;
  },
);

step("watch() does not count a slow consumer as a stall", async () => {
  const ns = await namespace();
  const ctl = new AbortController();
  const stream = watch(ConfigMap, {
    client: admin,
    namespace: ns,
    stallTimeoutMs: 1_000,
    signal: ctl.signal,
  });
  const it = stream[Symbol.asyncIterator]();
  assert.equal((await it.next()).value?.type, "relisted");
  // Heartbeats keep the server side of the watch busy throughout.
  let beats = 0;
  const heartbeat = setInterval(() => {
    const n = ++beats;
    admin.apply(ConfigMap, {
      metadata: { name: "heartbeat", namespace: ns },
      data: { n: String(n) },
    })
      .catch(() => {});
  }, 200);
  // The server may send a bookmark at any time (soon after a watch-list's end, too).
  const nextChange = async () => {
    for (;;) {
      const r = await it.next();
      if (r.value?.type !== "bookmark") return r;
    }
  };
  try {
    assert.equal((await nextChange()).value?.type, "added");
    // The consumer holds on to that event for 3 stall timeouts.
    const held = performance.now();
    await waitFor(() => performance.now() - held >= 3_000, { timeoutMs: 10_000 });
    const next = await nextChange();
    assert.equal(next.value?.type, "modified");
    assert.equal(stream.stats.stalls, 0);
    assert.equal(stream.stats.watchRequests, 1);
  } finally {
    clearInterval(heartbeat);
  }
  await it.return?.();
  assert.equal(stream.stats.state, "stopped");
  assert.equal(stream.stats.openRequests, 0);
});

step(
  "watch() with retryPersistent yields a forbidden list as one error event and recovers once RBAC allows it",
  async () => {
    const ns = await namespace();
    using carol = await createClient({ kubeconfig: await cp.createUser("carol") });
    const ctl = new AbortController();
    const stream = watch(ConfigMap, {
      client: carol,
      namespace: ns,
      retryPersistent: true,
      backoff: { initialMs: 100, maxMs: 500 },
      signal: ctl.signal,
    });
    const c = consume(stream);
    await waitFor(() => stream.stats.failures >= 3, { what: "retries" });
    assert.equal(c.events.length, 1, "reported once, not per retry");
    const denied = c.events[0];
    assert.equal(denied.type, "error");
    assert.equal(denied.error.code, 403);
    assert.equal(denied.error.persistent, true);
    assert.match(denied.error.message, /User "carol" cannot list resource "configmaps"/);
    await admin.create(Role, {
      metadata: { name: "read-cms", namespace: ns },
      rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["list", "watch"] }],
    });
    await admin.create(RoleBinding, {
      metadata: { name: "carol-reads-cms", namespace: ns },
      subjects: [{ kind: "User", name: "carol", apiGroup: "rbac.authorization.k8s.io" }],
      roleRef: { kind: "Role", name: "read-cms", apiGroup: "rbac.authorization.k8s.io" },
    });
    await waitFor(() => stream.stats.state === "watching", {
      what: "recovery once RBAC allows it",
    });
    assert.equal(c.events.at(-1)?.type, "relisted");
    assert.equal(stream.stats.error, undefined);
    assert.equal(c.state.error, undefined);
    ctl.abort();
    await c.done;
  },
);

step(
  "watch() restarts a list whose continue token expired, relists once on 410 Gone, and backs off when the next watch is Gone too",
  async () => {
    const ns = await namespace();
    const noise = await namespace();
    for (let i = 0; i < 6; i++) {
      await admin.create(ConfigMap, { metadata: { name: `cm-${i}`, namespace: ns } });
    }
    // A write, a compaction and a fresh watch cache: every version before now is gone.
    let expiries = 0;
    const expireHistory = async () => {
      await admin.create(ConfigMap, { metadata: { name: `x-${expiries++}`, namespace: noise } });
      await cp.compactEtcd();
      await cp.restartApiServer();
    };
    let expiredContinue = false;
    const rec = recordingClient(admin, {
      async beforeList(options) {
        if (options.continue && !expiredContinue) {
          expiredContinue = true;
          await expireHistory();
        }
      },
      async beforeWatch(n) {
        if (n <= 2) await expireHistory();
      },
    });
    const ctl = new AbortController();
    const stream = watch(ConfigMap, {
      client: rec.client,
      namespace: ns,
      initialSync: "list", // continue tokens are what this step tests
      pageSize: 2,
      backoff: { initialMs: 200, maxMs: 1_000 },
      signal: ctl.signal,
    });
    const c = consume(stream);
    await waitFor(() => rec.watches.length >= 3 && stream.stats.state === "watching", {
      what: "a watch that is not Gone",
      timeoutMs: 120_000,
    });
    // The first list: page 1, page 2 expired, then pages 1, 2 and 3 again.
    assert.deepEqual(rec.lists.slice(0, 5).map((l) => l.continue === undefined), [
      true,
      false,
      true,
      false,
      false,
    ]);
    const relisted = c.events.filter((e) => e.type === "relisted");
    assert.equal(relisted[0].objects.length, 6);
    assert.equal(stream.stats.lists, 3, "the list, an immediate relist, a relist after backoff");
    const errors = c.events.filter((e) => e.type === "error");
    assert.equal(
      errors.length,
      1,
      `only the second Gone is reported: ${errors.map((e) => e.error.message)}`,
    );
    assert.equal(errors[0].error.code, 410);
    assert.deepEqual(
      c.events.map((e) => e.type),
      ["relisted", "relisted", "error", "relisted"],
    );
    await admin.create(ConfigMap, { metadata: { name: "after", namespace: ns } });
    await waitFor(() => c.view.has(`${ns}/after`), { what: "the watch to work again" });
    assert.equal(stream.stats.error, undefined);
    assert.deepEqual(fingerprint(c.view.values()), await freshList(admin, ns));
    ctl.abort();
    await c.done;
  },
);

step(
  "watch() syncs with one watch-list request and no LIST, then resumes from its end bookmark",
  async () => {
    const ns = await namespace();
    for (const n of ["a", "b", "c", "d", "e"]) {
      await admin.create(ConfigMap, { metadata: { name: n, namespace: ns }, data: { n } });
    }
    await admin.delete(ConfigMap, "e", { namespace: ns });
    const rec = recordingClient(admin);
    const ctl = new AbortController();
    // The server ends each watch after 3 s, so that a second, plain watch follows.
    const stream = watch(ConfigMap, {
      initialSync: "watchList",
      client: rec.client,
      namespace: ns,
      timeoutSeconds: 3,
      signal: ctl.signal,
    });
    const c = consume(stream);
    await waitFor(() => stream.stats.state === "watching", { what: "the sync" });
    assert.equal(rec.lists.length, 0, "no LIST request");
    assert.equal(rec.watches.length, 1);
    const [w] = rec.watches;
    assert.equal(w.options.sendInitialEvents, true);
    assert.equal(w.options.resourceVersionMatch, "NotOlderThan");
    assert.equal(w.options.allowWatchBookmarks, true);
    assert.equal(w.options.resourceVersion, undefined, "a consistent read of the latest state");
    const first = c.events[0];
    assert.equal(first.type, "relisted");
    assert.deepEqual(fingerprint(first.objects), await freshList(admin, ns));
    assert.ok(first.objects.every((o) => o.kind === "ConfigMap" && o.apiVersion === "v1"));
    assert.equal(c.tracked[0], first.resourceVersion, "tracking starts at the end bookmark");
    const newest = Math.max(...first.objects.map((o) => Number(o.metadata.resourceVersion)));
    assert.ok(Number(first.resourceVersion) >= newest, "the bookmark is past every object");
    await admin.create(ConfigMap, { metadata: { name: "f", namespace: ns } });
    await waitFor(() => c.view.has(`${ns}/f`), { what: "a live event on the same request" });
    await waitFor(() => rec.watches.length >= 2, { what: "the server to end the watch-list" });
    const resumed = rec.watches[1];
    assert.equal(resumed.options.sendInitialEvents, undefined, "a plain watch");
    assert.equal(resumed.options.resourceVersion, rec.watches[0].lastResourceVersion);
    assert.ok(Number(resumed.options.resourceVersion) >= Number(first.resourceVersion));
    const stats = stream.stats;
    assert.equal(stats.initialSync, "watchList");
    assert.equal(stats.lists, 1);
    assert.equal(stats.listRequests, 0);
    assert.equal(stats.failures, 0);
    assert.equal(stats.maxOpenRequests, 1);
    assert.deepEqual(fingerprint(c.view.values()), await freshList(admin, ns));
    ctl.abort();
    await c.done;
    assert.equal(c.state.error, undefined);
  },
);

step("watch() syncs again with a watch-list after 410 Gone, reporting what vanished", async () => {
  const ns = await namespace();
  const noise = await namespace();
  for (let i = 0; i < 6; i++) {
    await admin.create(ConfigMap, { metadata: { name: `cm-${i}`, namespace: ns } });
  }
  // Before the second watch request (the resume): changes, then history forgotten.
  const rec = recordingClient(admin, {
    async beforeWatch(n) {
      if (n !== 2) return;
      await admin.delete(ConfigMap, "cm-0", { namespace: ns });
      await admin.create(ConfigMap, { metadata: { name: "new", namespace: ns } });
      await admin.create(ConfigMap, { metadata: { name: "x", namespace: noise } });
      await cp.compactEtcd();
      await cp.restartApiServer();
    },
  });
  const ctl = new AbortController();
  const stream = watch(ConfigMap, {
    initialSync: "watchList",
    client: rec.client,
    namespace: ns,
    timeoutSeconds: 3,
    backoff: { initialMs: 200, maxMs: 1_000 },
    signal: ctl.signal,
  });
  const c = consume(stream);
  await waitFor(() => stream.stats.lists === 2 && stream.stats.state === "watching", {
    what: "a second sync",
    timeoutMs: 120_000,
  });
  assert.equal(rec.lists.length, 0, "no LIST request");
  assert.equal(rec.watches[2].options.sendInitialEvents, true, "the sync after Gone");
  assert.equal(rec.watches[2].options.resourceVersion, undefined);
  const relisted = c.events.filter((e) => e.type === "relisted");
  assert.equal(relisted.length, 2);
  assert.equal(relisted[0].objects.length, 6);
  assert.deepEqual(relisted[1].objects.map((o) => o.metadata.name).sort(), [
    "cm-1",
    "cm-2",
    "cm-3",
    "cm-4",
    "cm-5",
    "new",
  ]);
  assert.equal(c.events.filter((e) => e.type === "error").length, 0, "one Gone is not reported");
  await admin.create(ConfigMap, { metadata: { name: "after", namespace: ns } });
  await waitFor(() => c.view.has(`${ns}/after`), { what: "the watch to work again" });
  assert.equal(stream.stats.error, undefined);
  assert.equal(stream.stats.listRequests, 0);
  assert.deepEqual(fingerprint(c.view.values()), await freshList(admin, ns));
  ctl.abort();
  await c.done;
});

step(
  "watch() falls back to paged lists, for good, on a server with the WatchList feature off",
  async () => {
    // The only step with its own control plane: the feature gate is per server.
    await using off = await startControlPlane({
      apiServerFlags: ["--feature-gates=WatchList=false"],
    });
    using client = await createClient({ kubeconfig: off.kubeconfigPath });
    const refused = await Array.fromAsync(client.watchEvents(ConfigMap, {
      sendInitialEvents: true,
      resourceVersionMatch: "NotOlderThan",
      allowWatchBookmarks: true,
    })).then(() => undefined, (e) => e);
    assert.ok(refused instanceof ApiError, String(refused));
    console.log(`refused: ${refused.code} ${refused.message}`);
    const ns = uniqueName("w");
    await client.create(Namespace, { metadata: { name: ns } });
    for (const n of ["a", "b", "c"]) {
      await client.create(ConfigMap, { metadata: { name: n, namespace: ns } });
    }
    // After the watch-list, the first list and a plain watch: forget the history.
    const rec = recordingClient(client, {
      async beforeWatch(n) {
        if (n !== 3) return;
        await client.delete(ConfigMap, "a", { namespace: ns });
        await off.compactEtcd();
        await off.restartApiServer();
      },
    });
    const ctl = new AbortController();
    const stream = watch(ConfigMap, {
      initialSync: "watchList",
      client: rec.client,
      namespace: ns,
      timeoutSeconds: 3,
      signal: ctl.signal,
    });
    const c = consume(stream);
    await waitFor(() => stream.stats.state === "watching", { what: "the sync" });
    assert.equal(rec.watches[0].options.sendInitialEvents, true);
    assert.equal(stream.stats.initialSync, "list", "the refusal is remembered");
    assert.equal(rec.lists.length, 1);
    assert.equal(c.events[0].type, "relisted");
    assert.deepEqual(fingerprint(c.events[0].objects), await freshList(client, ns));
    await waitFor(() => stream.stats.lists === 2 && stream.stats.state === "watching", {
      what: "a sync after Gone",
      timeoutMs: 120_000,
    });
    assert.equal(
      rec.watches.filter((w) => w.options.sendInitialEvents).length,
      1,
      "no second watch-list",
    );
    assert.equal(rec.lists.length, 2);
    assert.deepEqual(c.events.filter((e) => e.type === "error"), []);
    assert.equal(stream.stats.failures, 0);
    await client.create(ConfigMap, { metadata: { name: "d", namespace: ns } });
    await waitFor(() => c.view.has(`${ns}/d`), { what: "a live event" });
    assert.deepEqual(fingerprint(c.view.values()), await freshList(client, ns));
    ctl.abort();
    await c.done;
    assert.equal(c.state.error, undefined);
  },
);

const pace = () => new Promise((r) => setTimeout(r, 50)); // paces the writer; not a wait
