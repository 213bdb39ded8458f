import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { KubeconfigError, loadKubeconfig } from "./kubeconfig.ts";

const dir = await Deno.makeTempDir({ prefix: "kubeno-kubeconfig-" });
let n = 0;
async function write(text: string): Promise<string> {
  const path = `${dir}/config-${n++}.yaml`;
  await Deno.writeTextFile(path, text);
  return path;
}

const two = `apiVersion: v1
kind: Config
clusters:
- { name: a, cluster: { server: "https://a.example:6443" } }
- { name: b, cluster: { server: "https://b.example" } }
users:
- { name: tok, user: { token: t-a } }
- { name: basic, user: { username: ann, password: "p:w" } }
contexts:
- { name: ctx-a, context: { cluster: a, user: tok, namespace: apps } }
- { name: ctx-b, context: { cluster: b, user: basic } }
current-context: ctx-a
`;

Deno.test("loadKubeconfig selects the current or the requested context", async () => {
  const path = await write(two);
  const a = await loadKubeconfig({ kubeconfig: path });
  assert.equal(a.server, "https://a.example:6443");
  assert.equal(a.namespace, "apps");
  assert.equal(a.context, "ctx-a");
  assert.equal(a.source, path);
  assert.deepEqual((await a.credentials()).headers, { Authorization: "Bearer t-a" });
  const b = await loadKubeconfig({ kubeconfig: path, context: "ctx-b" });
  assert.equal(b.server, "https://b.example");
  assert.equal(b.namespace, "default");
  assert.equal((await b.credentials()).headers.Authorization, `Basic ${btoa("ann:p:w")}`);
});

Deno.test("loadKubeconfig reads KUBECONFIG, merging files with the first one winning", async () => {
  const first = await write(two);
  const second = await write(`apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://c.example" } }]
users: [{ name: u, user: { token: t-c } }]
contexts: [{ name: ctx-c, context: { cluster: c, user: u } }]
current-context: ctx-c
`);
  const saved = Deno.env.get("KUBECONFIG");
  Deno.env.set("KUBECONFIG", `${first}:${dir}/missing.yaml:${second}`);
  try {
    const a = await loadKubeconfig();
    assert.equal(a.context, "ctx-a");
    const c = await loadKubeconfig({ context: "ctx-c" });
    assert.equal(c.server, "https://c.example");
    Deno.env.set("KUBECONFIG", `${dir}/missing.yaml`);
    await assert.rejects(loadKubeconfig(), /KUBECONFIG names no existing file/);
  } finally {
    if (saved === undefined) Deno.env.delete("KUBECONFIG");
    else Deno.env.set("KUBECONFIG", saved);
  }
});

Deno.test("loadKubeconfig runs exec credential plugins per request", async () => {
  const script = `${dir}/cred.sh`;
  await Deno.writeTextFile(
    script,
    `#!/bin/sh
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}'
`,
  );
  await Deno.chmod(script, 0o755);
  const path = await write(`apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://c.example" } }]
users:
- name: u
  user:
    exec: { apiVersion: client.authentication.k8s.io/v1, command: "${script}", interactiveMode: Never }
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`);
  const access = await loadKubeconfig({ kubeconfig: path });
  assert.equal((await access.credentials()).headers.Authorization, "Bearer from-exec");
});

Deno.test("loadKubeconfig gives one-line errors naming the file", async (t) => {
  const cases: [string, string, RegExp][] = [
    ["malformed YAML", "clusters: [ {name: x\n  cluster: {\n", /: .+/],
    [
      "no context",
      "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://x}}]\n",
      /no current-context is set/,
    ],
    [
      "missing cluster",
      "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://x}}]\ncontexts: [{name: x, context: {cluster: nope, user: u}}]\ncurrent-context: x\n",
      /cluster "nope" of context "x" does not exist/,
    ],
    [
      "missing user",
      "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://x}}]\ncontexts: [{name: x, context: {cluster: c, user: ghost}}]\ncurrent-context: x\n",
      /user "ghost" of context "x" does not exist/,
    ],
    [
      "bad CA data",
      "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://x, certificate-authority-data: " +
      btoa("-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n") +
      "}}]\ncontexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
      /unusable certificate data/,
    ],
  ];
  for (const [name, text, want] of cases) {
    await t.step(name, async () => {
      const path = await write(text);
      const err = await loadKubeconfig({ kubeconfig: path }).catch((e) => e);
      assert.ok(err instanceof KubeconfigError, String(err));
      assert.ok(err.message.startsWith(`Cannot load kubeconfig "${path}": `), err.message);
      assert.match(err.message, want);
      assert.ok(!err.message.includes("\n"), err.message);
      assert.equal(err.path, path);
    });
  }
  await t.step("unknown context lists the known ones", async () => {
    const err = await loadKubeconfig({ kubeconfig: await write(two), context: "nope" }).catch((
      e,
    ) => e);
    assert.match(err.message, /context "nope" does not exist \(contexts: "ctx-a", "ctx-b"\)$/);
  });
});

Deno.test("loading client-node prints no punycode deprecation warning", async () => {
  const config = fileURLToPath(new URL("../../deno.json", import.meta.url));
  const path = await write(two);
  const code = `import { loadKubeconfig } from ${
    JSON.stringify(import.meta.resolve("./kubeconfig.ts"))
  };
const a = await loadKubeconfig({ kubeconfig: ${JSON.stringify(path)} });
await a.credentials();
console.log("loaded");`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--config", config, code],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(new TextDecoder().decode(out.stdout).trim(), "loaded", stderr);
  assert.equal(stderr, "");
});
