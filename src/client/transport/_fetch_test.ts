// The fetch carrier on its own, against local TLS servers: the cluster CA trusted, a
// `tls-server-name` verified instead of the URL's host, an untrusted certificate accepted only
// with `insecure-skip-tls-verify`, and a closed carrier refusing; and `cancelledBy`, which ends
// a streamed body when its request's signal aborts.
import assert from "node:assert/strict";
import type { ClusterAccess } from "../kubeconfig/kubeconfig.ts";
import { createCa, issueCert } from "../../util/x509.ts";
import { cancelledBy, FetchCarrier } from "./_fetch.ts";
import { TransportError } from "./transport_error.ts";

const CA = await createCa("fetch-carrier-test");

/** A TLS server on 127.0.0.1 with a certificate for `names`, answering with the path. */
async function serveAs(names: { dnsNames?: string[]; ipAddresses?: string[] }, issuer = CA) {
  const cert = await issueCert({ commonName: "api", server: true, ...names }, issuer);
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {}, cert: cert.certPem, key: cert.keyPem },
    (req) => new Response(`served ${new URL(req.url).pathname}`),
  );
}

/** A cluster at `server` as a kubeconfig resolves it. */
function access(server: string, more: Partial<ClusterAccess> = {}): ClusterAccess {
  return {
    server,
    namespace: "default",
    context: "test",
    source: "test",
    caCerts: [CA.certPem],
    insecureSkipTlsVerify: false,
    credentials: () => Promise.resolve({ headers: {} }),
    ...more,
  };
}

/** The body of a GET of `path` through `carrier`, which is closed afterwards. */
async function fetchText(carrier: FetchCarrier, path: string): Promise<string> {
  try {
    const res = await carrier.send({ method: "GET", path, headers: {} });
    assert.equal(res.status, 200);
    return await res.text();
  } finally {
    carrier.close();
  }
}

Deno.test("FetchCarrier: a server signed by the cluster CA is reached", async () => {
  await using server = await serveAs({ ipAddresses: ["127.0.0.1"] });
  const url = `https://127.0.0.1:${server.addr.port}`;
  assert.equal(await fetchText(new FetchCarrier(access(url)), "/api"), "served /api");
  assert.equal(
    new FetchCarrier(access(url)).webSocketUrl("/x"),
    `wss://127.0.0.1:${server.addr.port}/x`,
  );
});

Deno.test("FetchCarrier: tls-server-name is verified instead of the URL's host", async () => {
  await using server = await serveAs({ dnsNames: ["api.internal"] });
  const url = `https://127.0.0.1:${server.addr.port}`;
  // Without it the certificate does not name 127.0.0.1 and fetch refuses.
  await assert.rejects(fetchText(new FetchCarrier(access(url)), "/api"));
  const named = new FetchCarrier(access(url, { tlsServerName: "api.internal" }));
  assert.equal(await fetchText(named, "/api"), "served /api");
});

Deno.test("FetchCarrier: insecure-skip-tls-verify accepts a certificate nobody trusts", async () => {
  const stranger = await createCa("stranger");
  await using server = await serveAs({ ipAddresses: ["127.0.0.1"] }, stranger);
  const url = `https://127.0.0.1:${server.addr.port}`;
  await assert.rejects(fetchText(new FetchCarrier(access(url)), "/api"));
  const insecure = new FetchCarrier(access(url, { caCerts: [], insecureSkipTlsVerify: true }));
  assert.equal(insecure.webSocketUrl("/x"), `ws://127.0.0.1:${server.addr.port}/x`);
  assert.equal(await fetchText(insecure, "/api"), "served /api");
});

Deno.test("FetchCarrier: a closed carrier refuses with a TransportError", async () => {
  const carrier = new FetchCarrier(access("https://127.0.0.1:1"));
  carrier.close();
  await assert.rejects(
    carrier.send({ method: "GET", path: "/", headers: {} }),
    (e) => e instanceof TransportError && /the client is closed/.test(e.message),
  );
});

/** A body that sends one chunk and then nothing, recording why it was cancelled. */
function silentAfterOne(): { body: ReadableStream<Uint8Array>; cancelled: unknown[] } {
  const cancelled: unknown[] = [];
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new Uint8Array([1]));
    },
    cancel(reason) {
      cancelled.push(reason);
    },
  });
  return { body, cancelled };
}

Deno.test("cancelledBy: the signal cancels the body under a pending read, and the read throws its reason", async () => {
  const { body, cancelled } = silentAfterOne();
  const ctl = new AbortController();
  const reason = new DOMException("stop", "AbortError");
  const chunks: Uint8Array[] = [];
  const reading = (async () => {
    for await (const chunk of cancelledBy(body, ctl.signal)) {
      chunks.push(chunk);
      queueMicrotask(() => ctl.abort(reason));
    }
  })();
  await assert.rejects(reading, (err) => err === reason);
  assert.equal(chunks.length, 1);
  assert.deepEqual(cancelled, [reason]);
});

Deno.test("cancelledBy: stopping early cancels the body; a body read to its end is left alone", async () => {
  const { body, cancelled } = silentAfterOne();
  for await (const _ of cancelledBy(body, undefined)) break;
  assert.equal(cancelled.length, 1);

  const whole = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new Uint8Array([1]));
      c.close();
    },
    cancel() {
      throw new Error("cancelled after its end");
    },
  });
  const got: Uint8Array[] = [];
  for await (const chunk of cancelledBy(whole, new AbortController().signal)) got.push(chunk);
  assert.equal(got.length, 1);
});
