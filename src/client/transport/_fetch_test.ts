// The fetch carrier on its own, against local TLS servers: the cluster CA trusted, a
// `tls-server-name` verified instead of the URL's host, an untrusted certificate accepted only
// with `insecure-skip-tls-verify`, and a closed carrier refusing.
import assert from "node:assert/strict";
import type { ClusterAccess } from "../kubeconfig/kubeconfig.ts";
import { createCa, issueCert } from "../../util/x509.ts";
import { FetchCarrier } from "./_fetch.ts";
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
