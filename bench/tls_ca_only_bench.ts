// What trusting only the kubeconfig's CA would cost. Deno's fetch adds `caCerts` to the
// runtime's root store (Mozilla's roots, or the system's with DENO_TLS_CA_STORE=system, plus
// DENO_CERT and NODE_EXTRA_CA_CERTS); node:https with `ca` replaces it, as client-go's
// RootCAs does (tests/hardening_test.ts measures both against the real API server). This
// compares the two paths on the same real kube-apiserver over mutual TLS, interleaved:
//
//   fetch       Deno fetch + Deno.createHttpClient({ caCerts, cert, key }), json()
//   node-https  node:https.request with { ca, cert, key } and a keep-alive Agent, JSON.parse
//
// for a list of 10,000 ConfigMaps (~14 MB) and for 200 sequential small GETs.
//
//   deno run -A bench/tls_ca_only_bench.ts [runs=5]
import https from "node:https";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";

const runs = Number(Deno.args[0] ?? 5);
const total = 10_000;

await using cp = await startControlPlane();
using client = await createClient({ kubeconfig: cp.kubeconfigPath });
await client.create(Namespace, { metadata: { name: "bench" } });
const filler = "x".repeat(1_200);
let next = 0;
await Promise.all(Array.from({ length: 32 }, async () => {
  while (next < total) {
    const i = next++;
    await client.create(ConfigMap, {
      metadata: { name: `cm-${i}`, namespace: "bench" },
      data: { i: String(i), filler },
    });
  }
}));

// An admin client certificate issued by the control plane's CA is not at hand: make a user
// in system:masters through the test kubeconfig writer and read its PEMs back.
const kcPath = await cp.writeKubeconfig({ user: "bench-admin", groups: ["system:masters"] });
const kc = await Deno.readTextFile(kcPath);
const pem = (key: string) => atob(new RegExp(`${key}: (\\S+)`).exec(kc)![1]);
const cert = pem("client-certificate-data");
const key = pem("client-key-data");
const ca = cp.caCertPem;

using httpClient = Deno.createHttpClient({ caCerts: [ca], cert, key });
const agent = new https.Agent({ keepAlive: true, ca, cert, key });

async function viaFetch(path: string): Promise<any> {
  const res = await fetch(cp.server + path, {
    client: httpClient,
    headers: { accept: "application/json" },
  });
  return await res.json();
}

function viaNode(path: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const req = https.request(cp.server + path, {
      agent,
      headers: { accept: "application/json" },
    }, (res) => {
      const chunks: Uint8Array[] = [];
      res.on("data", (c: Uint8Array) => chunks.push(c));
      res.on("end", () => {
        try {
          resolve(JSON.parse(new TextDecoder().decode(concat(chunks))));
        } catch (e) {
          reject(e);
        }
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

const LIST = "/api/v1/namespaces/bench/configmaps";
const GET = "/api/v1/namespaces/bench/configmaps/cm-1";
const ways = {
  fetch: viaFetch,
  "node-https": viaNode,
};
const times: Record<string, { list: number[]; gets: number[] }> = {};
for (const [name, fn] of Object.entries(ways)) {
  times[name] = { list: [], gets: [] };
  if ((await fn(LIST)).items.length !== total) throw new Error(`${name}: wrong count`);
}
for (let r = 0; r < runs; r++) {
  for (const [name, fn] of Object.entries(ways)) {
    let t = performance.now();
    const n = (await fn(LIST)).items.length;
    times[name].list.push(performance.now() - t);
    if (n !== total) throw new Error(`${name} listed ${n}`);
    t = performance.now();
    for (let i = 0; i < 200; i++) await fn(GET);
    times[name].gets.push(performance.now() - t);
  }
}
agent.destroy();
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const range = (a: number[]) =>
  `min ${Math.min(...a).toFixed(0)} median ${med(a).toFixed(0)} max ${
    Math.max(...a).toFixed(0)
  } ms`;
console.log(`runs: ${runs}; Deno ${Deno.version.deno}`);
for (const [name, t] of Object.entries(times)) {
  console.log(`${name.padEnd(11)} list of ${total}: ${range(t.list)}; 200 GETs: ${range(t.gets)}`);
}
console.log(
  `node-https / fetch (medians): list ${
    (med(times["node-https"].list) / med(times.fetch.list)).toFixed(2)
  }x, ` +
    `GETs ${(med(times["node-https"].gets) / med(times.fetch.gets)).toFixed(2)}x`,
);
