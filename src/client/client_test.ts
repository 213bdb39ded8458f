// Client against a stand-in API server (plain HTTP, token user) started in the test: the
// request each verb sends, how failure bodies become ApiErrors, and the raw watch stream.
import assert from "node:assert/strict";
import {
  ApiError,
  ConnectionError,
  isConflict,
  isInvalid,
  isNotFound,
} from "./errors/api_error.ts";
import { createClient } from "./client.ts";
import { resource } from "../core/resource.ts";
import { ConfigMap, Namespace } from "../core/kinds.ts";
import { ClusterRole } from "../core/api/rbac/v1.ts";
import { createCa, issueCert } from "../util/x509.ts";

type Workload = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };
// A grouped, namespaced kind; loosely typed so that tests can send partial objects.
const Deployment = resource<Workload>({ group: "apps", version: "v1", kind: "Deployment" });
import type { KubeObject } from "../core/object.ts";

/** One request the stand-in server received. */
interface Seen {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | null;
  accept: string | null;
  authorization: string | null;
  body: unknown;
}

type Answer = (seen: Seen, req: Request) => Response | Promise<Response>;

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

/** Echoes the request back as the object, so that a write "returns what was stored". */
const echo: Answer = (seen) =>
  json(seen.body ?? { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "echo" } });

const CA = await createCa("stand-in");
const SERVING = await issueCert({
  commonName: "127.0.0.1",
  ipAddresses: ["127.0.0.1"],
  server: true,
}, CA);

/**
 * A kubeconfig for a server on 127.0.0.1 (HTTPS with {@link SERVING}'s CA, or `plain` HTTP),
 * token user, context namespace `team`.
 */
async function writeKubeconfig(path: string, port: number, plain = false): Promise<void> {
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      "current-context": "c",
      clusters: [{
        name: "c",
        cluster: {
          server: `${plain ? "http" : "https"}://127.0.0.1:${port}`,
          ...(plain ? {} : { "certificate-authority-data": btoa(CA.certPem) }),
        },
      }],
      users: [{ name: "u", user: { token: "s3cret" } }],
      contexts: [{ name: "c", context: { cluster: "c", user: "u", namespace: "team" } }],
    }),
  );
}

/**
 * A stand-in API server on 127.0.0.1 and a client for it whose context namespace is `team`.
 * Each request is recorded and answered by `answer` (default: echo the body). It serves
 * HTTPS, so one-shot requests and watches take the client's own HTTP/1.1 path (`_http1.ts`) and
 * lists `fetch`, as against a real API server; `plain` serves HTTP, where all take `fetch`.
 */
async function stand(
  answer: Answer = echo,
  clientOptions: { fieldManager?: string; plain?: boolean } = {},
) {
  const seen: Seen[] = [];
  let current = answer;
  const { plain, ...options } = clientOptions;
  const tls = plain ? {} : { cert: SERVING.certPem, key: SERVING.keyPem };
  const connections = new Set<number>();
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {}, ...tls },
    async (req, info) => {
      connections.add((info.remoteAddr as Deno.NetAddr).port);
      const url = new URL(req.url);
      const text = await req.text();
      const s: Seen = {
        method: req.method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        contentType: req.headers.get("content-type"),
        accept: req.headers.get("accept"),
        authorization: req.headers.get("authorization"),
        body: text ? JSON.parse(text) : undefined,
      };
      seen.push(s);
      return await current(s, req);
    },
  );
  const dir = await Deno.makeTempDir();
  const kubeconfig = `${dir}/config`;
  await writeKubeconfig(kubeconfig, server.addr.port, plain);
  const client = await createClient({ kubeconfig, ...options });
  return {
    client,
    seen,
    /** The client's connections seen so far (their source ports). */
    connections,
    /** The last request received. */
    get last(): Seen {
      assert.ok(seen.length > 0, "no request was received");
      return seen.at(-1)!;
    },
    answer(next: Answer) {
      current = next;
    },
    async [Symbol.asyncDispose]() {
      client.close();
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

function statusBody(code: number, reason: string, message: string, details?: unknown) {
  return { apiVersion: "v1", kind: "Status", status: "Failure", code, reason, message, details };
}

Deno.test("Client accepts an http:// server and authenticates with the kubeconfig's token", async () => {
  await using api = await stand(echo, { plain: true });
  assert.ok(api.client.server.startsWith("http://127.0.0.1:"));
  assert.equal(api.client.namespace, "team");
  assert.equal(api.client.fieldManager, "kubeno");
  await api.client.get(ConfigMap, "settings");
  assert.equal(api.last.authorization, "Bearer s3cret");
  assert.equal(api.last.accept, "application/json");
});

Deno.test("Client.get and getStatus: GET the object's path, core and grouped, namespaced and cluster-scoped", async () => {
  await using api = await stand((s) =>
    json({ apiVersion: "v1", kind: "X", metadata: { name: s.path } })
  );
  const c = api.client;
  const got = await c.get(ConfigMap, "settings");
  assert.equal(got.metadata.name, "/api/v1/namespaces/team/configmaps/settings");
  const cases: [() => Promise<unknown>, string][] = [
    [() => c.get(ConfigMap, "a", { namespace: "ns" }), "/api/v1/namespaces/ns/configmaps/a"],
    [() => c.get(Namespace, "ns", { namespace: "ignored" }), "/api/v1/namespaces/ns"],
    [
      () => c.get(Deployment, "web", { namespace: "apps" }),
      "/apis/apps/v1/namespaces/apps/deployments/web",
    ],
    [() => c.get(ClusterRole, "admin"), "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin"],
    [() => c.getStatus(Deployment, "web"), "/apis/apps/v1/namespaces/team/deployments/web/status"],
    [() => c.getStatus(Namespace, "ns"), "/api/v1/namespaces/ns/status"],
  ];
  for (const [call, path] of cases) {
    const obj = await call() as KubeObject;
    assert.equal(api.last.method, "GET");
    assert.equal(api.last.path, path);
    assert.equal(obj.metadata.name, path);
    assert.equal(api.last.body, undefined);
  }
});

Deno.test("Client.list: GET the collection with the selectors and paging as query parameters", async () => {
  await using api = await stand(() =>
    json({
      kind: "ConfigMapList",
      apiVersion: "v1",
      metadata: { resourceVersion: "42", continue: "next" },
      items: [{ metadata: { name: "a" } }, { metadata: { name: "b" } }],
    })
  );
  const list = await api.client.list(ConfigMap, {
    namespace: "ns",
    labelSelector: "app=web,tier!=db",
    fieldSelector: "metadata.name=a",
    limit: 2,
    continue: "tok en",
    resourceVersion: "40",
    resourceVersionMatch: "NotOlderThan",
  });
  assert.equal(api.last.method, "GET");
  assert.equal(api.last.path, "/api/v1/namespaces/ns/configmaps");
  assert.deepEqual(api.last.query, {
    labelSelector: "app=web,tier!=db",
    fieldSelector: "metadata.name=a",
    limit: "2",
    continue: "tok en",
    resourceVersion: "40",
    resourceVersionMatch: "NotOlderThan",
  });
  assert.equal(list.metadata.resourceVersion, "42");
  assert.equal(list.metadata.continue, "next");
  assert.deepEqual(
    list.items.map((i) => [i.apiVersion, i.kind, i.metadata.name]),
    [["v1", "ConfigMap", "a"], ["v1", "ConfigMap", "b"]],
    "items get apiVersion and kind",
  );

  await api.client.list(ConfigMap);
  assert.equal(api.last.path, "/api/v1/configmaps", "no namespace: all namespaces");
  assert.deepEqual(api.last.query, {});
  await api.client.list(ClusterRole, { namespace: "ignored" });
  assert.equal(api.last.path, "/apis/rbac.authorization.k8s.io/v1/clusterroles");

  const page = await api.client.listPage(Deployment, { namespace: "ns", limit: 1 });
  assert.equal(api.last.path, "/apis/apps/v1/namespaces/ns/deployments");
  assert.equal(page.metadata?.continue, "next", "list metadata known before decoding");
  assert.deepEqual(page.decode().items.map((i) => i.kind), ["Deployment", "Deployment"]);
});

Deno.test("Client.listPages and listAll follow continue tokens; listAll lists unpaged after 410", async () => {
  const pages: Record<string, { continue?: string; items: string[] }> = {
    "": { continue: "p2", items: ["a", "b"] },
    p2: { continue: "p3", items: ["c"] },
    p3: { items: ["d"] },
  };
  await using api = await stand((s) => {
    const p = pages[s.query.continue ?? ""];
    return json({
      metadata: { resourceVersion: "7", continue: p.continue },
      items: p.items.map((name) => ({ metadata: { name } })),
    });
  });
  const seenPages: string[][] = [];
  for await (const page of api.client.listPages(ConfigMap, { namespace: "ns", limit: 2 })) {
    seenPages.push(page.items.map((i) => i.metadata.name!));
  }
  assert.deepEqual(seenPages, [["a", "b"], ["c"], ["d"]]);
  assert.deepEqual(api.seen.map((s) => [s.query.limit, s.query.continue]), [
    ["2", undefined],
    ["2", "p2"],
    ["2", "p3"],
  ]);

  api.seen.length = 0;
  const all = await api.client.listAll(ConfigMap);
  assert.deepEqual(all.items.map((i) => i.metadata.name), ["a", "b", "c", "d"]);
  assert.equal(all.metadata.resourceVersion, "7");
  assert.equal(api.seen[0].query.limit, "500", "default page size");

  // The continue token expires after the first page: one list without paging.
  api.seen.length = 0;
  api.answer((s) => {
    if (s.query.continue) return json(statusBody(410, "Expired", "too old"), 410);
    if (s.query.limit) return json({ metadata: { continue: "p2" }, items: [] });
    return json({ metadata: { resourceVersion: "9" }, items: [{ metadata: { name: "z" } }] });
  });
  const again = await api.client.listAll(ConfigMap, { limit: 1 });
  assert.deepEqual(again.items.map((i) => i.metadata.name), ["z"]);
  assert.deepEqual(api.seen.map((s) => s.query), [
    { limit: "1" },
    { limit: "1", continue: "p2" },
    {},
  ]);
});

Deno.test("Client.create: POST to the collection with type meta filled in and the field manager", async () => {
  await using api = await stand(echo, { fieldManager: "my-operator" });
  const created = await api.client.create(ConfigMap, {
    metadata: { name: "a", namespace: "ns" },
    data: { k: "v" },
  } as KubeObject);
  assert.equal(api.last.method, "POST");
  assert.equal(api.last.path, "/api/v1/namespaces/ns/configmaps", "the object's namespace");
  assert.equal(api.last.contentType, "application/json");
  assert.deepEqual(api.last.query, { fieldManager: "my-operator" });
  assert.deepEqual(api.last.body, {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "a", namespace: "ns" },
    data: { k: "v" },
  });
  assert.equal(created.kind, "ConfigMap");

  await api.client.create(Deployment, { metadata: { generateName: "web-" } }, {
    namespace: "apps",
    dryRun: true,
    fieldManager: "other",
    fieldValidation: "Strict",
  });
  assert.equal(api.last.path, "/apis/apps/v1/namespaces/apps/deployments");
  assert.deepEqual(api.last.query, {
    fieldManager: "other",
    fieldValidation: "Strict",
    dryRun: "All",
  });
  assert.deepEqual(
    [(api.last.body as KubeObject).apiVersion, (api.last.body as KubeObject).kind],
    ["apps/v1", "Deployment"],
  );

  await api.client.create(ConfigMap, { metadata: { name: "b" } });
  assert.equal(api.last.path, "/api/v1/namespaces/team/configmaps", "the client's namespace");
  await api.client.create(Namespace, { metadata: { name: "n" } });
  assert.equal(api.last.path, "/api/v1/namespaces");
});

Deno.test("Client.replace and replaceStatus: PUT to the object and to its status subresource", async () => {
  await using api = await stand();
  const obj = { metadata: { name: "web", namespace: "apps", resourceVersion: "5" } };
  await api.client.replace(Deployment, obj);
  assert.equal(api.last.method, "PUT");
  assert.equal(api.last.path, "/apis/apps/v1/namespaces/apps/deployments/web");
  assert.deepEqual(api.last.query, { fieldManager: "kubeno" });
  assert.deepEqual((api.last.body as KubeObject).metadata, obj.metadata);
  await api.client.replaceStatus(Deployment, obj);
  assert.equal(api.last.method, "PUT");
  assert.equal(api.last.path, "/apis/apps/v1/namespaces/apps/deployments/web/status");
  await api.client.replace(ClusterRole, { metadata: { name: "admin" } });
  assert.equal(api.last.path, "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin");

  const before = api.seen.length;
  assert.throws(
    () => api.client.replace(ConfigMap, { metadata: {} }),
    (e) => e instanceof TypeError && /metadata\.name is missing/.test(e.message),
  );
  assert.equal(api.seen.length, before, "no request for a nameless object");
});

Deno.test("Client.patch and patchStatus: PATCH with the patch type's content type", async () => {
  await using api = await stand();
  await api.client.patch(ConfigMap, "a", { data: { k: "v" } });
  assert.equal(api.last.method, "PATCH");
  assert.equal(api.last.path, "/api/v1/namespaces/team/configmaps/a");
  assert.equal(api.last.contentType, "application/merge-patch+json", "merge by default");
  assert.deepEqual(api.last.body, { data: { k: "v" } });
  assert.deepEqual(api.last.query, { fieldManager: "kubeno" });

  const ops = [{ op: "replace" as const, path: "/spec/replicas", value: 3 }];
  await api.client.patch(Deployment, "web", ops, { type: "json", namespace: "apps" });
  assert.equal(api.last.contentType, "application/json-patch+json");
  assert.equal(api.last.path, "/apis/apps/v1/namespaces/apps/deployments/web");
  assert.deepEqual(api.last.body, ops);

  await api.client.patch(Deployment, "web", { spec: {} }, { type: "strategic", dryRun: true });
  assert.equal(api.last.contentType, "application/strategic-merge-patch+json");
  assert.deepEqual(api.last.query, { fieldManager: "kubeno", dryRun: "All" });

  await api.client.patchStatus(Deployment, "web", { status: { replicas: 1 } } as never);
  assert.equal(api.last.path, "/apis/apps/v1/namespaces/team/deployments/web/status");
  assert.equal(api.last.contentType, "application/merge-patch+json");

  const before = api.seen.length;
  assert.throws(
    () => api.client.patch(ConfigMap, "a", { data: {} }, { type: "json" }),
    /a JSON patch must be an array/,
  );
  assert.throws(
    () => api.client.patch(ConfigMap, "a", [], { type: "bogus" as "json" }),
    (e) => e instanceof TypeError && /unknown patch type "bogus"/.test(e.message),
  );
  assert.equal(api.seen.length, before, "no request for a bad patch");
});

Deno.test("Client.apply and applyStatus: server-side apply with its content type, field manager and force", async () => {
  await using api = await stand();
  await api.client.apply(ConfigMap, { metadata: { name: "a" }, data: { k: "v" } } as never);
  assert.equal(api.last.method, "PATCH");
  assert.equal(api.last.path, "/api/v1/namespaces/team/configmaps/a");
  assert.equal(api.last.contentType, "application/apply-patch+yaml");
  assert.deepEqual(api.last.query, { fieldManager: "kubeno" }, "no force unless asked");
  assert.deepEqual(api.last.body, {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "a" },
    data: { k: "v" },
  });

  await api.client.apply(Deployment, { metadata: { name: "web", namespace: "apps" } }, {
    force: true,
    fieldManager: "mgr",
  });
  assert.equal(api.last.path, "/apis/apps/v1/namespaces/apps/deployments/web");
  assert.deepEqual(api.last.query, { fieldManager: "mgr", force: "true" });

  await api.client.applyStatus(ClusterRole, { metadata: { name: "admin" } }, { force: true });
  assert.equal(api.last.path, "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin/status");
  assert.equal(api.last.contentType, "application/apply-patch+yaml");
  assert.deepEqual(api.last.query, { fieldManager: "kubeno", force: "true" });

  const before = api.seen.length;
  assert.throws(
    () => api.client.apply(ConfigMap, { metadata: {} } as never),
    (e) =>
      e instanceof TypeError && /Cannot apply ConfigMap: metadata\.name is missing/.test(e.message),
  );
  assert.equal(api.seen.length, before);
});

Deno.test("Client.delete: DELETE with DeleteOptions; undefined for a Status, the object otherwise", async () => {
  await using api = await stand(() =>
    json({ apiVersion: "v1", kind: "Status", status: "Success", details: { name: "a" } })
  );
  const gone = await api.client.delete(ConfigMap, "a", {
    namespace: "ns",
    propagationPolicy: "Foreground",
    preconditions: { resourceVersion: "5", uid: "u-1" },
    gracePeriodSeconds: 0,
    dryRun: true,
  });
  assert.equal(gone, undefined);
  assert.equal(api.last.method, "DELETE");
  assert.equal(api.last.path, "/api/v1/namespaces/ns/configmaps/a");
  assert.equal(api.last.contentType, "application/json");
  assert.deepEqual(api.last.body, {
    apiVersion: "v1",
    kind: "DeleteOptions",
    propagationPolicy: "Foreground",
    preconditions: { resourceVersion: "5", uid: "u-1" },
    gracePeriodSeconds: 0,
    dryRun: ["All"],
  });

  api.answer(() =>
    json({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "n", deletionTimestamp: "2024-01-01T00:00:00Z", finalizers: ["x"] },
    })
  );
  const pending = await api.client.delete(Namespace, "n");
  assert.equal(api.last.path, "/api/v1/namespaces/n");
  assert.deepEqual(api.last.body, { apiVersion: "v1", kind: "DeleteOptions" });
  assert.equal(pending?.metadata.name, "n", "deletion pending on finalizers returns the object");
});

Deno.test("Client: a 404 Status body becomes an ApiError NotFound naming what was addressed", async () => {
  await using api = await stand(() =>
    json(
      statusBody(404, "NotFound", 'configmaps "a" not found', { name: "a", kind: "configmaps" }),
      404,
    )
  );
  const err = await api.client.get(ConfigMap, "a", { namespace: "ns" }).catch((e) => e);
  assert.ok(err instanceof ApiError);
  assert.equal(err.code, 404);
  assert.equal(err.reason, "NotFound");
  assert.equal(err.serverMessage, 'configmaps "a" not found');
  assert.equal(err.resourceUnknown, false);
  assert.ok(isNotFound(err));
  assert.deepEqual(err.target, {
    verb: "get",
    kind: "ConfigMap",
    apiVersion: "v1",
    plural: "configmaps",
    name: "a",
    namespace: "ns",
  });
  assert.equal(err.message, 'Cannot get ConfigMap "ns/a": NotFound: configmaps "a" not found');

  const status = await api.client.getStatus(Deployment, "web").catch((e) => e);
  assert.ok(status instanceof ApiError);
  assert.deepEqual([status.target.verb, status.target.subresource], ["get", "status"]);

  // A path the server does not route: plain text, the kind itself is unknown.
  api.answer(() => new Response("404 page not found\n", { status: 404 }));
  const Widget = resource({ group: "example.com", version: "v1", kind: "Widget" });
  const unknown = await api.client.list(Widget).catch((e) => e);
  assert.ok(unknown instanceof ApiError);
  assert.equal(unknown.resourceUnknown, true);
  assert.equal(isNotFound(unknown), false);
  assert.equal(unknown.target.verb, "list");
  assert.match(unknown.message, /widgets\.example\.com\/v1/);
});

Deno.test("Client: a 409 apply conflict and a 422 Invalid carry their field causes", async () => {
  const conflictCauses = [
    {
      reason: "FieldManagerConflict",
      message: 'conflict with "kubectl"',
      field: ".data.k",
    },
  ];
  await using api = await stand(() =>
    json(
      statusBody(409, "Conflict", "Apply failed with 1 conflict", {
        name: "a",
        kind: "configmaps",
        causes: conflictCauses,
      }),
      409,
    )
  );
  const conflict = await api.client.apply(ConfigMap, { metadata: { name: "a" } } as never)
    .catch((e) => e);
  assert.ok(conflict instanceof ApiError);
  assert.ok(isConflict(conflict));
  assert.equal(conflict.code, 409);
  assert.equal(conflict.target.verb, "apply");
  assert.deepEqual(conflict.causes, conflictCauses);

  const invalidCauses = [
    { reason: "FieldValueRequired", message: "Required value", field: "spec.selector" },
    { reason: "FieldValueInvalid", message: "must be positive", field: "spec.replicas" },
  ];
  api.answer(() =>
    json(
      statusBody(422, "Invalid", 'Deployment.apps "web" is invalid', {
        name: "web",
        group: "apps",
        kind: "Deployment",
        causes: invalidCauses,
      }),
      422,
    )
  );
  const invalid = await api.client.create(Deployment, { metadata: { name: "web" } })
    .catch((e) => e);
  assert.ok(invalid instanceof ApiError);
  assert.ok(isInvalid(invalid));
  assert.deepEqual([invalid.code, invalid.reason], [422, "Invalid"]);
  assert.deepEqual(invalid.causes, invalidCauses);
  assert.deepEqual(invalid.target.namespace, "team");
  assert.equal(invalid.status?.details?.group, "apps");
});

/** A response that writes `chunks` as they are given, then closes. */
function streamed(chunks: string[]): Response {
  const enc = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(ctl) {
      for (const c of chunks) ctl.enqueue(enc.encode(c));
      ctl.close();
    },
  });
  return new Response(body, { headers: { "Content-Type": "application/json" } });
}

Deno.test("Client.watchEvents: ?watch=1 with its options; NDJSON lines become events; ends when the server closes", async () => {
  const lines = [
    { type: "ADDED", object: { metadata: { name: "a", resourceVersion: "2" } } },
    { type: "MODIFIED", object: { metadata: { name: "a", resourceVersion: "3" } } },
    { type: "BOOKMARK", object: { metadata: { resourceVersion: "4" } } },
    { type: "DELETED", object: { metadata: { name: "a", resourceVersion: "5" } } },
    { type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } },
  ].map((l) => JSON.stringify(l)).join("\n\n"); // blank lines between, none at the end
  // Split mid-line (one byte at a time for a while), the last line without a newline.
  await using api = await stand(() =>
    streamed([...lines.slice(0, 20).split(""), lines.slice(20, 90), lines.slice(90)])
  );
  let connected = 0;
  const events = [];
  for await (
    const ev of api.client.watchEvents(ConfigMap, {
      namespace: "ns",
      labelSelector: "app=web",
      fieldSelector: "metadata.name=a",
      resourceVersion: "1",
      allowWatchBookmarks: true,
      timeoutSeconds: 300,
      onConnected: () => void connected++,
    })
  ) {
    events.push(ev);
  }
  assert.equal(connected, 1);
  assert.equal(api.last.method, "GET");
  assert.equal(api.last.path, "/api/v1/namespaces/ns/configmaps");
  assert.deepEqual(api.last.query, {
    watch: "1",
    labelSelector: "app=web",
    fieldSelector: "metadata.name=a",
    resourceVersion: "1",
    allowWatchBookmarks: "true",
    timeoutSeconds: "300",
  });
  assert.deepEqual(
    events.map((e) => [e.type, (e.object as KubeObject).metadata?.resourceVersion]),
    [["ADDED", "2"], ["MODIFIED", "3"], ["BOOKMARK", "4"], ["DELETED", "5"], ["ERROR", undefined]],
  );
  assert.equal((events[4].object as { code: number }).code, 410);

  api.answer(() => streamed([]));
  const none = [];
  for await (const ev of api.client.watchEvents(ClusterRole)) none.push(ev);
  assert.deepEqual(none, [], "an empty stream ends without events");
  assert.equal(api.last.path, "/apis/rbac.authorization.k8s.io/v1/clusterroles");
  assert.deepEqual(api.last.query, { watch: "1" });
});

Deno.test("Client.watchEvents: a non-2xx answer throws an ApiError, a malformed line a ConnectionError", async () => {
  await using api = await stand(() => json(statusBody(403, "Forbidden", "no"), 403));
  const forbidden = await (async () => {
    for await (const _ of api.client.watchEvents(ConfigMap)) { /* none */ }
  })().catch((e) => e);
  assert.ok(forbidden instanceof ApiError);
  assert.deepEqual([forbidden.code, forbidden.reason, forbidden.target.verb], [
    403,
    "Forbidden",
    "watch",
  ]);

  api.answer(() => streamed(['{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n', "{oops\n"]));
  const got: string[] = [];
  const broken = await (async () => {
    for await (const ev of api.client.watchEvents(ConfigMap)) got.push(ev.type);
  })().catch((e) => e);
  assert.deepEqual(got, ["ADDED"]);
  assert.ok(broken instanceof ConnectionError);
  assert.match(broken.message, /malformed event/);
});

Deno.test("Client.watchEvents: stopping early ends the request; the client stays usable", async () => {
  let closed!: () => void;
  const cancelled = new Promise<void>((r) => closed = r);
  await using api = await stand(() => {
    const enc = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(ctl) {
        ctl.enqueue(enc.encode('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n'));
      },
      cancel() {
        closed();
      },
    });
    return new Response(body);
  });
  for await (const ev of api.client.watchEvents(ConfigMap)) {
    assert.equal(ev.type, "ADDED");
    break;
  }
  await cancelled; // the server saw the stream cancelled
  api.answer(echo);
  await api.client.get(ConfigMap, "b");
  assert.equal(api.last.path, "/api/v1/namespaces/team/configmaps/b");
});

Deno.test("Client.watchEvents over HTTPS: each event as it arrives, on kubeno's own connection, kept for the next request once the watch ends", async () => {
  const enc = new TextEncoder();
  let send!: (line: string) => void;
  let end!: () => void;
  let opened!: () => void;
  const streaming = new Promise<void>((r) => opened = r);
  await using api = await stand(() =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(ctl) {
          send = (line) => ctl.enqueue(enc.encode(line));
          end = () => ctl.close();
          opened();
        },
      }),
      { headers: { "Content-Type": "application/json" } },
    )
  );
  const it = api.client.watchEvents(ConfigMap)[Symbol.asyncIterator]();
  const first = it.next();
  await streaming;
  send('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
  assert.equal((await first).value?.type, "ADDED", "the first event before the stream ends");
  const second = it.next();
  send('{"type":"DELETED","object":{"metadata":{"name":"a"}}}\n');
  assert.equal((await second).value?.type, "DELETED");
  end();
  assert.equal((await it.next()).done, true);
  api.answer(echo);
  await api.client.get(ConfigMap, "b");
  assert.equal(
    api.connections.size,
    1,
    "the get took the connection the watch had (fetch would have used another)",
  );
});

Deno.test("Client.watchEvents over HTTPS: aborting the signal mid-stream rejects with its reason and closes the connection", async () => {
  let cancelled!: () => void;
  const closed = new Promise<void>((r) => cancelled = r);
  await using api = await stand(() =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(ctl) {
          ctl.enqueue(new TextEncoder().encode('{"type":"ADDED","object":{}}\n'));
        },
        cancel: () => cancelled(),
      }),
    )
  );
  const stop = new AbortController();
  const got: string[] = [];
  const err = await (async () => {
    for await (const ev of api.client.watchEvents(ConfigMap, { signal: stop.signal })) {
      got.push(ev.type);
      setTimeout(() => stop.abort(new Error("watch stopped")), 10);
    }
  })().catch((e) => e);
  assert.deepEqual(got, ["ADDED"]);
  assert.match(String(err), /watch stopped/);
  await closed;
  api.answer(echo);
  await api.client.get(ConfigMap, "c"); // a new connection: the aborted one was not kept
  assert.equal(api.connections.size, 2);
});

Deno.test("Client.request: any method and path, with a body and content type", async () => {
  await using api = await stand(() => json({ major: "1", minor: "36" }));
  const version = await api.client.request<{ minor: string }>("GET", "/version");
  assert.equal(version.minor, "36");
  assert.deepEqual([api.last.method, api.last.path], ["GET", "/version"]);
  await api.client.request("POST", "/apis/x/v1/things?dryRun=All", {
    body: { a: 1 },
    contentType: "application/yaml",
  });
  assert.deepEqual([api.last.method, api.last.path, api.last.query], [
    "POST",
    "/apis/x/v1/things",
    { dryRun: "All" },
  ]);
  assert.equal(api.last.contentType, "application/yaml");
  assert.deepEqual(api.last.body, { a: 1 });
});

Deno.test("Client over HTTPS: one-shot requests share one kept-alive connection, lists and watches use their own", async () => {
  await using api = await stand();
  for (let i = 0; i < 20; i++) await api.client.get(ConfigMap, `cm-${i}`);
  await api.client.patch(ConfigMap, "cm-0", { data: { a: "1" } });
  await api.client.delete(ConfigMap, "cm-1");
  assert.equal(api.seen.length, 22);
  assert.equal(api.connections.size, 1, `${api.connections.size} connections for 22 requests`);
});

Deno.test("Client over HTTPS: a chunked response body is read whole", async () => {
  const enc = new TextEncoder();
  await using api = await stand(() =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(ctl) {
          const text = JSON.stringify({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "big" },
            data: { v: "x".repeat(200_000) },
          });
          for (let i = 0; i < text.length; i += 7_000) {
            ctl.enqueue(enc.encode(text.slice(i, i + 7_000)));
          }
          ctl.close();
        },
      }),
      { headers: { "Content-Type": "application/json" } },
    )
  );
  const got = await api.client.get(ConfigMap, "big");
  assert.equal(got.data?.v.length, 200_000);
  await api.client.get(ConfigMap, "again"); // and the connection is still usable
  assert.equal(api.connections.size, 1);
});

Deno.test("Client over HTTPS: an error status is an ApiError; an aborted request rejects with the signal's reason", async () => {
  let hang = false;
  let release = () => {};
  const released = new Promise<void>((r) => release = r);
  await using api = await stand((s) =>
    hang ? released.then(() => json({})) : json(
      statusBody(404, "NotFound", `configmaps "${s.path.split("/").pop()}" not found`, {
        name: s.path.split("/").pop(),
        kind: "configmaps",
      }),
      404,
    )
  );
  const err = await api.client.get(ConfigMap, "gone").catch((e) => e);
  assert.ok(err instanceof ApiError && isNotFound(err), String(err));
  assert.match(err.message, /configmaps "gone" not found/);
  hang = true;
  const stop = new AbortController();
  const pending = api.client.get(ConfigMap, "slow", { signal: stop.signal });
  await new Promise((r) => setTimeout(r, 50));
  stop.abort(new Error("stop now"));
  await assert.rejects(pending, /stop now/);
  release(); // the stand-in's handler ends, so that it can shut down
  hang = false;
  const after = await api.client.get(ConfigMap, "next").catch((e) => e);
  assert.ok(isNotFound(after), "the client works after an aborted request");
});

/**
 * A bare HTTPS server answering every request with one ConfigMap, keeping the connection
 * open unless `closeAfterEach` (then it closes it after the answer without saying so, no
 * `Connection: close`). `open` holds the connections it has not closed.
 */
function rawServer(closeAfterEach: boolean) {
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: SERVING.certPem,
    key: SERVING.keyPem,
  });
  const open = new Set<Deno.Conn>();
  const body = JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" } });
  const answer = new TextEncoder().encode(
    `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  const served = { accepted: 0, open, port: listener.addr.port };
  const serving = (async () => {
    for await (const conn of listener) {
      served.accepted++;
      open.add(conn);
      (async () => {
        const buf = new Uint8Array(16_384);
        let got = "";
        for (;;) {
          const n = await conn.read(buf);
          if (n === null) return;
          got += new TextDecoder().decode(buf.subarray(0, n));
          for (let end; (end = got.indexOf("\r\n\r\n")) >= 0;) {
            got = got.slice(end + 4);
            await conn.write(answer);
            if (closeAfterEach) return;
          }
        }
      })().catch(() => {}).finally(() => {
        open.delete(conn);
        try {
          conn.close();
        } catch { /* closed already */ }
      });
    }
  })();
  return {
    served,
    /** A client of it, in a fresh kubeconfig. */
    async client() {
      const dir = await Deno.makeTempDir();
      await writeKubeconfig(`${dir}/config`, served.port);
      const client = await createClient({ kubeconfig: `${dir}/config` });
      return Object.assign(client, {
        [Symbol.dispose]() {
          client.close();
          Deno.removeSync(dir, { recursive: true });
        },
      });
    },
    async [Symbol.asyncDispose]() {
      for (const conn of open) conn.close();
      listener.close();
      await serving.catch(() => {});
    },
  };
}

Deno.test("Client over HTTPS: a kept-alive connection the server closed is retried on a new one", async () => {
  // One request per connection, as an idle timeout racing the next request does.
  await using server = rawServer(true);
  using client = await server.client();
  for (let i = 0; i < 3; i++) {
    await client.get(ConfigMap, "a");
    await new Promise((r) => setTimeout(r, 20)); // the close reaches the client first
  }
  assert.equal(server.served.accepted, 3);
});

Deno.test("Client over HTTPS: every kept-alive connection the server closed while idle is passed over, not failed on", async () => {
  // Its connections all close at once, as an idle timeout closes a burst's connections
  // together: the next request meets several closed ones in a row.
  await using server = rawServer(false);
  using client = await server.client();
  await Promise.all(Array.from({ length: 6 }, () => client.get(ConfigMap, "a")));
  const burst = server.served.accepted;
  assert.ok(burst >= 2, `the burst kept ${burst} connection(s) alive, not several`);
  for (const conn of server.served.open) conn.close();
  await new Promise((r) => setTimeout(r, 50)); // the closes reach the client first
  for (let i = 0; i < 3; i++) await client.get(ConfigMap, "a");
  assert.equal(server.served.accepted, burst + 1, "one new connection, then kept alive");
});

Deno.test("Client over HTTPS: asks for gzip, as client-go does, and reads a gzip-compressed body", async () => {
  let asked: string | null = null;
  await using api = await stand(async (_s, req) => {
    asked = req.headers.get("accept-encoding");
    const text = JSON.stringify({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "z" },
      data: { v: "y".repeat(50_000) },
    });
    const gz = await new Response(
      new Blob([text]).stream().pipeThrough(new CompressionStream("gzip")),
    ).arrayBuffer();
    return new Response(gz, {
      headers: { "Content-Type": "application/json", "Content-Encoding": "gzip" },
    });
  });
  const got = await api.client.get(ConfigMap, "z");
  assert.equal(asked, "gzip");
  assert.equal(got.data?.v.length, 50_000);
});

Deno.test("Client over HTTPS: a server that never completes the handshake does not outlast the request's signal", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn); // accepted, never answered
  })();
  const dir = await Deno.makeTempDir();
  try {
    await writeKubeconfig(`${dir}/config`, listener.addr.port);
    using client = await createClient({ kubeconfig: `${dir}/config` });
    const stop = new AbortController();
    const pending = client.get(ConfigMap, "a", { namespace: "x", signal: stop.signal });
    await new Promise((r) => setTimeout(r, 100));
    stop.abort(new Error("gave up"));
    await assert.rejects(pending, /gave up/);
  } finally {
    listener.close();
    for (const c of held) c.close();
    await accepting.catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});
