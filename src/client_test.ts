// Unit tests of the client against a fake HTTP API server on loopback; the real control
// plane tests are in tests/client_test.ts.
import assert from "node:assert/strict";
import { ApiError, ConnectionError, isNotFound } from "./api_error.ts";
import { type Client, createClient } from "./client.ts";
import { resource } from "./resource.ts";
import type { KubeObject } from "./object.ts";

const ConfigMaps = resource<KubeObject & { data?: Record<string, string> }>({
  group: "",
  version: "v1",
  kind: "ConfigMap",
});

interface Seen {
  method: string;
  url: URL;
  contentType: string | null;
  body: string;
}

async function fakeServer(
  handler: (req: Request, seen: Seen) => Response | Promise<Response>,
): Promise<{ client: Client; seen: Seen[]; [Symbol.asyncDispose](): Promise<void> }> {
  const seen: Seen[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const s = {
      method: req.method,
      url: new URL(req.url),
      contentType: req.headers.get("content-type"),
      body: req.body ? await req.text() : "",
    };
    seen.push(s);
    return handler(req, s);
  });
  const path = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(
    path,
    `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "http://127.0.0.1:${server.addr.port}", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: t0k } }]
contexts: [{ name: x, context: { cluster: c, user: u, namespace: ns1 } }]
current-context: x
`,
  );
  const client = await createClient({ kubeconfig: path, fieldManager: "tester" });
  return {
    client,
    seen,
    async [Symbol.asyncDispose]() {
      client.close();
      await server.shutdown();
      await Deno.remove(path);
    },
  };
}

const json = (v: unknown, status = 200) =>
  new Response(JSON.stringify(v), { status, headers: { "content-type": "application/json" } });

Deno.test("list builds the URL and fills apiVersion/kind of items", async () => {
  await using f = await fakeServer(() =>
    json({
      kind: "ConfigMapList",
      apiVersion: "v1",
      metadata: { resourceVersion: "7", continue: "abc" },
      items: [{ metadata: { name: "a" } }],
    })
  );
  const list = await f.client.list(ConfigMaps, {
    namespace: "n s",
    labelSelector: "app=web",
    limit: 5,
    continue: "tok",
  });
  assert.equal(list.items[0].kind, "ConfigMap");
  assert.equal(list.items[0].apiVersion, "v1");
  assert.equal(list.metadata.continue, "abc");
  assert.equal(f.seen[0].url.pathname, "/api/v1/namespaces/n%20s/configmaps");
  assert.equal(f.seen[0].url.search, "?labelSelector=app%3Dweb&limit=5&continue=tok");
});

Deno.test("writes send the field manager, dryRun, patch content types and force", async () => {
  await using f = await fakeServer((_req, s) => json({ metadata: { name: "a" }, echo: s.body }));
  const c = f.client;
  await c.create(ConfigMaps, { metadata: { name: "a" } }, { dryRun: true });
  await c.patch(ConfigMaps, "a", { data: { k: "v" } });
  await c.patch(ConfigMaps, "a", [{ op: "remove", path: "/data/k" }], { type: "json" });
  await c.apply(ConfigMaps, { metadata: { name: "a" }, data: { k: "v" } }, { force: true });
  await c.patchStatus(ConfigMaps, "a", { data: { x: "y" } }, { namespace: "other" });
  const [create, merge, jsonPatch, apply, status] = f.seen;
  assert.equal(create.method, "POST");
  assert.equal(create.url.pathname, "/api/v1/namespaces/ns1/configmaps");
  assert.equal(create.url.search, "?fieldManager=tester&dryRun=All");
  assert.deepEqual(JSON.parse(create.body), {
    metadata: { name: "a" },
    apiVersion: "v1",
    kind: "ConfigMap",
  });
  assert.equal(merge.contentType, "application/merge-patch+json");
  assert.equal(jsonPatch.contentType, "application/json-patch+json");
  assert.equal(apply.contentType, "application/apply-patch+yaml");
  assert.equal(apply.url.search, "?fieldManager=tester&force=true");
  assert.equal(status.url.pathname, "/api/v1/namespaces/other/configmaps/a/status");
});

Deno.test("delete sends DeleteOptions and returns undefined for a Status", async () => {
  await using f = await fakeServer(() => json({ kind: "Status", status: "Success" }));
  const out = await f.client.delete(ConfigMaps, "a", {
    propagationPolicy: "Foreground",
    preconditions: { uid: "u1" },
    gracePeriodSeconds: 0,
  });
  assert.equal(out, undefined);
  assert.deepEqual(JSON.parse(f.seen[0].body), {
    apiVersion: "v1",
    kind: "DeleteOptions",
    propagationPolicy: "Foreground",
    preconditions: { uid: "u1" },
    gracePeriodSeconds: 0,
  });
});

Deno.test("a Status failure becomes an ApiError naming the object", async () => {
  await using f = await fakeServer(() =>
    json({
      kind: "Status",
      status: "Failure",
      reason: "NotFound",
      code: 404,
      message: 'configmaps "foo" not found',
      details: { name: "foo", kind: "configmaps" },
    }, 404)
  );
  const err = await f.client.get(ConfigMaps, "foo").catch((e) => e);
  assert.ok(isNotFound(err));
  assert.equal(err.message, 'Cannot get ConfigMap "ns1/foo": NotFound: configmaps "foo" not found');
});

Deno.test("watchEvents parses events split across chunks and cancels on break", async () => {
  const { promise: cancelled, resolve } = Promise.withResolvers<void>();
  const lines = [
    { type: "ADDED", object: { metadata: { name: "a", resourceVersion: "1" } } },
    { type: "MODIFIED", object: { metadata: { name: "a", resourceVersion: "2" } } },
    { type: "BOOKMARK", object: { metadata: { resourceVersion: "3" } } },
  ].map((e) => JSON.stringify(e) + "\n").join("");
  const bytes = new TextEncoder().encode(lines);
  await using f = await fakeServer(() => {
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += 13) c.enqueue(bytes.slice(i, i + 13));
        // Left open like a real watch, until the client goes away.
      },
      cancel() {
        resolve();
      },
    });
    return new Response(body, { headers: { "content-type": "application/json" } });
  });
  const got: string[] = [];
  for await (const ev of f.client.watchEvents(ConfigMaps, { allowWatchBookmarks: true })) {
    got.push(`${ev.type}:${ev.object.metadata?.resourceVersion}`);
    if (got.length === 3) break;
  }
  assert.deepEqual(got, ["ADDED:1", "MODIFIED:2", "BOOKMARK:3"]);
  assert.equal(f.seen[0].url.search, "?watch=1&allowWatchBookmarks=true");
  await deadline(cancelled, 5_000, "the server never saw the watch request go away");
});

Deno.test("watchEvents ends when the server closes the stream", async () => {
  await using f = await fakeServer(() => new Response('{"type":"ADDED","object":{"metadata":{}}}'));
  const events = await Array.fromAsync(f.client.watchEvents(ConfigMaps, { namespace: "a" }));
  assert.equal(events.length, 1);
});

Deno.test("watchEvents throws ApiError for a non-2xx response", async () => {
  await using f = await fakeServer(() =>
    json({ kind: "Status", reason: "Forbidden", code: 403, message: "no" }, 403)
  );
  await assert.rejects(
    Array.fromAsync(f.client.watchEvents(ConfigMaps)),
    (e) => e instanceof ApiError && e.code === 403 && e.target.verb === "watch",
  );
});

Deno.test("watchEvents rejects with the signal's reason and releases the request", async () => {
  const { promise: cancelled, resolve } = Promise.withResolvers<void>();
  await using f = await fakeServer(() =>
    new Response(
      new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode('{"type":"ADDED","object":{"metadata":{}}}\n'));
        },
        cancel() {
          resolve();
        },
      }),
    )
  );
  const ac = new AbortController();
  const reason = new Error("stop");
  await assert.rejects(
    (async () => {
      for await (const _ of f.client.watchEvents(ConfigMaps, { signal: ac.signal })) {
        ac.abort(reason);
      }
    })(),
    (e) => e === reason,
  );
  await deadline(cancelled, 5_000, "the aborted watch request stayed open");
});

Deno.test("an unreachable server gives a one-line ConnectionError naming it", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const path = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(
    path,
    `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: {} }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`,
  );
  using client = await createClient({ kubeconfig: path });
  const err = await client.list(ConfigMaps).catch((e) => e);
  assert.ok(err instanceof ConnectionError, String(err));
  assert.ok(err.message.includes(`"http://127.0.0.1:${port}"`), err.message);
  assert.ok(!err.message.includes("\n"));
  await Deno.remove(path);
});

async function deadline(p: Promise<void>, ms: number, what: string): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(what)), ms);
  });
  try {
    await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}
