// The HTTPS webhook server under malformed and hostile input (fuzzed bodies, huge and deep
// bodies, garbage on the TLS port) and across certificate swaps, with no cluster.
import assert from "node:assert/strict";
import tls from "node:tls";
import { admission } from "./admission.ts";
import { ConfigMap } from "../core/kinds.ts";
import { createCa, issueCert } from "../util/x509.ts";
import { startWebhookServer, type WebhookServer } from "./server.ts";

const ca = await createCa("fuzz-ca");
const serving = () =>
  issueCert({
    commonName: "webhook",
    dnsNames: ["localhost"],
    ipAddresses: ["127.0.0.1"],
    server: true,
  }, ca);

const webhook = admission(ConfigMap, {
  default(cm) {
    cm.metadata.labels = { ...cm.metadata.labels, "fuzz/defaulted": "yes" };
  },
  validate({ object }) {
    if (object?.data?.boom) throw new Error("boom");
    if (object?.data?.deny) return "denied by rule";
  },
});

function validReview(uid: string = crypto.randomUUID()): any {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      kind: { group: "", version: "v1", kind: "ConfigMap" },
      resource: { group: "", version: "v1", resource: "configmaps" },
      name: "a",
      namespace: "default",
      operation: "CREATE",
      userInfo: { username: "fuzzer" },
      object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" }, data: { k: "v" } },
      dryRun: false,
    },
  };
}

async function start(): Promise<WebhookServer> {
  const c = await serving();
  return startWebhookServer({
    webhooks: [webhook],
    certificate: c,
    hostname: "127.0.0.1",
    port: 0,
    maxBodyBytes: 128 * 1024,
  });
}

function post(server: WebhookServer, client: Deno.HttpClient, path: string, body: BodyInit) {
  return fetch(`https://127.0.0.1:${server.port}${path}`, { method: "POST", body, client });
}

const PATHS = ["/validate--v1-configmap", "/mutate--v1-configmap"];

// Every leaf path of a valid review, to put a wrong-typed value at each.
function leafPaths(v: unknown, prefix: string[] = []): string[][] {
  if (typeof v !== "object" || v === null) return [prefix];
  return [prefix, ...Object.entries(v).flatMap(([k, x]) => leafPaths(x, [...prefix, k]))];
}
const WRONG = [null, 0, -1, 1e308, "", "x", true, [], {}, [1, "a"], { a: { b: 1 } }];

function setAt(doc: any, path: string[], value: unknown): any {
  if (path.length === 0) return value;
  let cur = doc;
  for (const k of path.slice(0, -1)) cur = cur[k];
  cur[path[path.length - 1]] = value;
  return doc;
}

Deno.test("fuzzed and malformed AdmissionReviews never crash the server", async () => {
  await using server = await start();
  using client = Deno.createHttpClient({ caCerts: [ca.certPem] });
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const bodies: { body: BodyInit; uid?: string; path: string }[] = [];
  const pick = () => PATHS[Math.floor(rnd() * PATHS.length)];
  for (let i = 0; i < 1500; i++) {
    const bytes = new Uint8Array(Math.floor(rnd() * 600));
    for (let j = 0; j < bytes.length; j++) bytes[j] = Math.floor(rnd() * 256);
    bodies.push({ body: bytes, path: pick() });
  }
  const text = JSON.stringify(validReview("trunc"));
  for (let i = 0; i < text.length; i += 3) bodies.push({ body: text.slice(0, i), path: pick() });
  for (const path of leafPaths(validReview())) {
    for (const wrong of WRONG) {
      const uid = crypto.randomUUID();
      const doc = setAt(validReview(uid), path, structuredClone(wrong));
      const keepsUid = path.join(".") !== "request.uid" && path.join(".") !== "request" &&
        path.length > 0;
      bodies.push({ body: JSON.stringify(doc), uid: keepsUid ? uid : undefined, path: pick() });
    }
  }
  for (let i = 0; i < 600; i++) {
    const uid = crypto.randomUUID();
    const doc = validReview(uid);
    doc.request.object.data = { deny: rnd() < 0.5 ? "1" : "", boom: rnd() < 0.3 ? "1" : "" };
    doc.request.operation = ["CREATE", "UPDATE", "DELETE", "CONNECT"][Math.floor(rnd() * 4)];
    doc.request.oldObject = rnd() < 0.5 ? doc.request.object : undefined;
    doc.request.dryRun = rnd() < 0.5;
    bodies.push({ body: JSON.stringify(doc), uid, path: pick() });
  }
  const deep = 50_000;
  bodies.push({ body: "[".repeat(deep) + "]".repeat(deep), path: PATHS[0] });
  const nested = validReview("deep");
  nested.request.object.data = JSON.parse('{"a":'.repeat(3000) + "1" + "}".repeat(3000));
  bodies.push({ body: JSON.stringify(nested), path: PATHS[1] });
  bodies.push({ body: "x".repeat(200 * 1024), path: PATHS[0] }); // over the limit
  bodies.push({ body: streamOf(200 * 1024), path: PATHS[0] }); // no content-length
  bodies.push({ body: JSON.stringify(validReview()), path: "/nope" });

  const statuses = new Map<number, number>();
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const { body, uid, path } = bodies[next++];
      const res = await post(server, client, path, body);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const got = await res.text();
      assert.ok([200, 400, 404, 413].includes(res.status), `status ${res.status}: ${got}`);
      if (res.status === 200) {
        const review = JSON.parse(got);
        assert.equal(review.apiVersion, "admission.k8s.io/v1");
        assert.equal(review.kind, "AdmissionReview");
        assert.equal(typeof review.response.allowed, "boolean");
        if (uid) assert.equal(review.response.uid, uid);
      } else {
        assert.ok(got.length > 0, "an error names what was wrong");
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  assert.ok(bodies.length >= 2000, `${bodies.length} bodies`);
  assert.equal(statuses.get(413), 2, JSON.stringify([...statuses]));
  assert.ok((statuses.get(200) ?? 0) > 500);

  // Garbage at the TLS layer: plain bytes, a stalled handshake, an abrupt close.
  for (let i = 0; i < 20; i++) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
    await conn.write(new TextEncoder().encode("GET / HTTP/1.1\r\n\r\n\x16\x03\x01garbage"));
    conn.close();
  }

  // Still answers a valid review, with the patch.
  const res = await post(server, client, PATHS[1], JSON.stringify(validReview("after")));
  const review = await res.json();
  assert.equal(review.response.uid, "after");
  assert.equal(review.response.allowed, true);
  const patch = JSON.parse(atob(review.response.patch));
  assert.deepEqual(patch, [{
    op: "add",
    path: "/metadata/labels",
    value: { "fuzz/defaulted": "yes" },
  }]);
});

function streamOf(size: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(c) {
      if (sent >= size) return c.close();
      sent += 8192;
      c.enqueue(new Uint8Array(8192).fill(65));
    },
  });
}

function peerFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = tls.connect({ host: "127.0.0.1", port, ca: ca.certPem }, () => {
      const fp = sock.getPeerCertificate().fingerprint256;
      sock.end();
      resolve(fp);
    });
    sock.on("error", reject);
  });
}

Deno.test("setCertificate swaps the served certificate while clients keep being answered", async () => {
  await using server = await start();
  using client = Deno.createHttpClient({ caCerts: [ca.certPem] });
  const before = await peerFingerprint(server.port);
  let stop = false;
  let answered = 0;
  const load = (async () => {
    while (!stop) {
      const res = await post(server, client, PATHS[0], JSON.stringify(validReview()));
      assert.equal(res.status, 200);
      await res.body?.cancel();
      answered++;
    }
  })();
  for (let i = 0; i < 5; i++) {
    const mark = answered;
    server.setCertificate(await serving());
    // Waits on the condition, with a deadline so that a server that stopped answering
    // fails the test instead of hanging it.
    const deadline = Date.now() + 30_000;
    while (answered < mark + 3) {
      if (Date.now() > deadline) {
        throw new Error(`only ${answered - mark} answers in 30 s after certificate ${i + 1}`);
      }
      await new Promise((r) => setTimeout(r, 1));
    }
  }
  const after = await peerFingerprint(server.port);
  assert.notEqual(after, before);
  stop = true;
  await load;
  assert.ok(answered > 0);
  const other = await createCa("other");
  assert.throws(
    () => server.setCertificate({ certPem: server.certificate.certPem, keyPem: other.keyPem }),
    /key does not match/,
  );
  assert.equal(await peerFingerprint(server.port), after, "a bad certificate is not applied");
});
