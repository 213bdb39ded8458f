import assert from "node:assert/strict";
import { loadKubeconfig } from "../client/kubeconfig/kubeconfig.ts";
import { createCa, issueCert } from "../util/x509.ts";
import { type LagProxy, startLagProxy } from "./lag_proxy.ts";

/** What the fake API server saw of one request. */
interface Seen {
  method: string;
  path: string;
  headers: Headers;
  body: string;
}

/**
 * A fake API server over TLS: `GET .../configmaps/NAME` answers a ConfigMap, `POST` echoes its
 * body, `?watch=true` opens a stream that the test writes to with `send`, anything else 404.
 */
async function fakeApiServer() {
  const ca = await createCa("fake-api-ca");
  const serving = await issueCert(
    { commonName: "fake-api", ipAddresses: ["127.0.0.1"], server: true },
    ca,
  );
  const seen: Seen[] = [];
  const streams = new Map<string, ReadableStreamDefaultController<Uint8Array>>();
  const stop = new AbortController();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: serving.certPem,
    key: serving.keyPem,
    signal: stop.signal,
    onListen: () => {},
  }, async (req) => {
    const url = new URL(req.url);
    seen.push({
      method: req.method,
      path: url.pathname + url.search,
      headers: new Headers(req.headers),
      body: req.body ? await req.text() : "",
    });
    if (["true", "1"].includes(url.searchParams.get("watch") ?? "")) {
      const body = new ReadableStream<Uint8Array>({
        start: (c) => void streams.set(url.pathname, c),
        cancel: () => void streams.delete(url.pathname),
      });
      return new Response(body, { headers: { "content-type": "application/json" } });
    }
    if (req.method === "POST") return new Response(seen.at(-1)!.body, { status: 201 });
    if (url.pathname === "/api/v1/namespaces/default/configmaps/a") {
      return Response.json({ kind: "ConfigMap", metadata: { name: "a" }, data: { k: "v" } });
    }
    return Response.json({ kind: "Status", code: 404, reason: "NotFound" }, { status: 404 });
  });
  const kubeconfig = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:${server.addr.port}", certificate-authority-data: "${
      btoa(ca.certPem)
    }" } }]
users: [{ name: u, user: { token: upstream-token } }]
contexts: [{ name: dev, context: { cluster: c, user: u, namespace: team } }]
current-context: dev
`,
  );
  return {
    kubeconfig,
    seen,
    /** Writes one watch event line to the open watch on `path`; returns when it was written. */
    send(path: string, name: string): number {
      const c = streams.get(path);
      assert.ok(c, `no open watch on ${path}`);
      c.enqueue(
        new TextEncoder().encode(JSON.stringify({ type: "ADDED", object: { name } }) + "\n"),
      );
      return performance.now();
    },
    async [Symbol.asyncDispose]() {
      for (const c of streams.values()) c.close();
      stop.abort();
      await server.finished;
      await Deno.remove(kubeconfig);
    },
  };
}

/** A fetch client that trusts the proxy, from the kubeconfig the proxy wrote. */
async function proxyClient(proxy: LagProxy) {
  const access = await loadKubeconfig({ kubeconfig: proxy.kubeconfigPath });
  const client = Deno.createHttpClient({ caCerts: access.caCerts });
  return {
    fetch: (path: string, init: RequestInit = {}) => fetch(proxy.url + path, { ...init, client }),
    [Symbol.dispose]: () => client.close(),
  };
}

/** Reads a watch body line by line, recording when each line arrived. */
function watchLines(res: Response) {
  const lines: { name: string; at: number }[] = [];
  let arrived = Promise.withResolvers<void>();
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const reading = (async () => {
    let buf = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      buf += r.value;
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        lines.push({ name: JSON.parse(buf.slice(0, i)).object.name, at: performance.now() });
        buf = buf.slice(i + 1);
      }
      arrived.resolve();
      arrived = Promise.withResolvers();
    }
  })().catch(() => {});
  return {
    lines,
    /** Waits until `name` has arrived and returns when. */
    async at(name: string): Promise<number> {
      for (;;) {
        const line = lines.find((l) => l.name === name);
        if (line) return line.at;
        await arrived.promise;
      }
    },
    async [Symbol.asyncDispose]() {
      await reader.cancel().catch(() => {});
      await reading;
    },
  };
}

const CONFIGMAPS = "/api/v1/namespaces/default/configmaps";
const DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments";

Deno.test("requests pass through with status, body and the right Authorization", async () => {
  await using upstream = await fakeApiServer();
  await using proxy = await startLagProxy({ kubeconfig: upstream.kubeconfig });
  using client = await proxyClient(proxy);

  const get = await client.fetch(`${CONFIGMAPS}/a`);
  assert.equal(get.status, 200);
  assert.deepEqual(await get.json(), {
    kind: "ConfigMap",
    metadata: { name: "a" },
    data: { k: "v" },
  });
  const missing = await client.fetch(`${CONFIGMAPS}/nope`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).reason, "NotFound");
  const post = await client.fetch(CONFIGMAPS, {
    method: "POST",
    body: ReadableStream.from(["{", '"kind":"ConfigMap"', "}"]).pipeThrough(
      new TextEncoderStream(),
    ),
    headers: { authorization: "Bearer caller-token", "content-type": "application/json" },
  });
  assert.equal(post.status, 201);
  assert.equal(await post.text(), '{"kind":"ConfigMap"}');

  const [g, , p] = upstream.seen;
  assert.equal(g.path, `${CONFIGMAPS}/a`);
  assert.equal(g.headers.get("authorization"), "Bearer upstream-token");
  assert.equal(g.headers.get("accept-encoding"), "identity");
  assert.equal(p.method, "POST");
  assert.equal(p.headers.get("authorization"), "Bearer caller-token");
  assert.equal(p.body, '{"kind":"ConfigMap"}');
  assert.equal(proxy.stats.watches, 0);

  // The written kubeconfig: the proxy as cluster, the upstream user and namespace.
  const access = await loadKubeconfig({ kubeconfig: proxy.kubeconfigPath });
  assert.equal(access.server, proxy.url);
  assert.equal(access.namespace, "team");
  assert.equal((await access.credentials()).headers.Authorization, "Bearer upstream-token");
});

Deno.test("the proxy offers HTTP/2", async () => {
  await using upstream = await fakeApiServer();
  await using proxy = await startLagProxy({ kubeconfig: upstream.kubeconfig });
  const access = await loadKubeconfig({ kubeconfig: proxy.kubeconfigPath });
  using conn = await Deno.connectTls({
    hostname: "127.0.0.1",
    port: proxy.port,
    caCerts: access.caCerts,
    alpnProtocols: ["h2", "http/1.1"],
  });
  assert.equal((await conn.handshake()).alpnProtocol, "h2");
});

Deno.test("delay holds matching watches back and nothing else", async () => {
  await using upstream = await fakeApiServer();
  await using proxy = await startLagProxy({ kubeconfig: upstream.kubeconfig });
  using client = await proxyClient(proxy);
  const cms = { resource: "configmaps", group: "" };
  proxy.delay(cms, 300);

  await using cmWatch = watchLines(await client.fetch(`${CONFIGMAPS}?watch=true`));
  await using deployWatch = watchLines(await client.fetch(`${DEPLOYMENTS}?watch=1`));
  // A list of the delayed resource is not a watch: it passes at once.
  assert.equal((await client.fetch(`${CONFIGMAPS}/a`)).status, 200);
  assert.deepEqual(proxy.stats, { watches: 2, delayedWatches: 1, delayedChunks: 0 });

  const wrote = upstream.send(CONFIGMAPS, "cm-1");
  upstream.send(CONFIGMAPS, "cm-2");
  upstream.send(DEPLOYMENTS, "deploy-1");
  const cmAt = await cmWatch.at("cm-1");
  const deployAt = await deployWatch.at("deploy-1");
  await cmWatch.at("cm-2");
  assert.ok(cmAt - wrote >= 250, `cm-1 arrived ${cmAt - wrote} ms after it was written`);
  assert.ok(deployAt < cmAt, "the deployment watch was held back with the configmap one");
  assert.deepEqual(cmWatch.lines.map((l) => l.name), ["cm-1", "cm-2"]);
  assert.ok(proxy.stats.delayedChunks >= 1);

  // Removing the rule frees the open configmap watch; a rule on deployments, set while its
  // watch is open, now holds that one back.
  proxy.delay(cms, 0);
  proxy.delay({ resource: "deployments", namespace: "default" }, 300);
  assert.equal(proxy.stats.delayedWatches, 1);
  const wrote2 = upstream.send(DEPLOYMENTS, "deploy-2");
  upstream.send(CONFIGMAPS, "cm-3");
  const deploy2At = await deployWatch.at("deploy-2");
  const cm3At = await cmWatch.at("cm-3");
  assert.ok(cm3At < deploy2At, "the configmap watch is still held back after its rule was removed");
  assert.ok(deploy2At - wrote2 >= 250, `deploy-2 arrived ${deploy2At - wrote2} ms after writing`);
});

Deno.test("rules match on group and namespace", async () => {
  await using upstream = await fakeApiServer();
  await using proxy = await startLagProxy({ kubeconfig: upstream.kubeconfig });
  using client = await proxyClient(proxy);
  proxy.delay({ resource: "configmaps", namespace: "other" }, 60_000);
  proxy.delay({ resource: "deployments", group: "" }, 60_000);
  await using cmWatch = watchLines(await client.fetch(`${CONFIGMAPS}?watch=true`));
  await using deployWatch = watchLines(await client.fetch(`${DEPLOYMENTS}?watch=true`));
  assert.equal(proxy.stats.delayedWatches, 0);
  upstream.send(CONFIGMAPS, "cm");
  upstream.send(DEPLOYMENTS, "deploy");
  await cmWatch.at("cm");
  await deployWatch.at("deploy");
  assert.equal(proxy.stats.delayedChunks, 0);
});

Deno.test("close ends open watches, even while chunks are held", async () => {
  await using upstream = await fakeApiServer();
  const proxy = await startLagProxy({ kubeconfig: upstream.kubeconfig });
  using client = await proxyClient(proxy);
  proxy.delay({ resource: "configmaps" }, 60_000);
  const res = await client.fetch(`${CONFIGMAPS}?watch=true`);
  const body = res.body!.getReader();
  upstream.send(CONFIGMAPS, "held");
  await proxy.close();
  await assert.rejects(body.read());
  await assert.rejects(Deno.stat(proxy.kubeconfigPath), Deno.errors.NotFound);
});

Deno.test("startLagProxy names the kubeconfig it cannot read", async () => {
  await assert.rejects(
    startLagProxy({ kubeconfig: "/nonexistent/kubeconfig.yaml" }),
    (e: Error) =>
      e.name === "KubeconfigError" && !e.message.includes("\n") &&
      e.message.includes('"/nonexistent/kubeconfig.yaml"'),
  );
});

Deno.test("delay rejects bad arguments", async () => {
  await using upstream = await fakeApiServer();
  await using proxy = await startLagProxy({ kubeconfig: upstream.kubeconfig });
  assert.throws(() => proxy.delay({ resource: "" }, 10), TypeError);
  assert.throws(() => proxy.delay({ resource: "pods" }, -1), RangeError);
  assert.throws(() => proxy.delay({ resource: "pods" }, NaN), RangeError);
});
