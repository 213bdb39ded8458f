import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { loadKubeconfig } from "./kubeconfig.ts";
import { KubeconfigError } from "./kubeconfig_error.ts";
import { inClusterConfig } from "./_kubeconfig_file.ts";
import { CLIENT_NODE } from "./_auth_provider.ts";
import { FILE_REFRESH_MS } from "./_credentials.ts";
import { type Clock, realClock } from "../../util/clock.ts";

/** A clock whose `now()` moves only when a test says so. */
function manualClock(start = Date.now()): Clock & { advance(ms: number): void } {
  let t = start;
  return { ...realClock, now: () => t, advance: (ms: number) => void (t += ms) };
}

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

Deno.test("loadKubeconfig resolves relative file references against the kubeconfig", async () => {
  const sub = `${dir}/rel`;
  await Deno.mkdir(sub, { recursive: true });
  await Deno.writeTextFile(`${sub}/token`, "from-file\n");
  const path = `${sub}/config.yaml`;
  await Deno.writeTextFile(
    path,
    `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://c.example" } }]
users: [{ name: u, user: { tokenFile: token } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`,
  );
  const access = await loadKubeconfig({ kubeconfig: path });
  assert.equal((await access.credentials()).headers.Authorization, "Bearer from-file");
});

Deno.test("a token file is read again a minute after the last read, and after a 401", async () => {
  const token = `${dir}/rotating-token`;
  await Deno.writeTextFile(token, "one");
  const path = await write(`apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://c.example" } }]
users: [{ name: u, user: { tokenFile: "${token}", token: ignored } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`);
  const clock = manualClock();
  const access = await loadKubeconfig({ kubeconfig: path, clock });
  const first = await access.credentials();
  assert.equal(first.headers.Authorization, "Bearer one");
  await Deno.writeTextFile(token, "two");
  clock.advance(FILE_REFRESH_MS - 1);
  assert.equal(await access.credentials(), first, "cached within the minute: the same object");
  clock.advance(1);
  assert.equal((await access.credentials()).headers.Authorization, "Bearer two");
  // A 401 reads the file at once; unchanged content means a retry cannot help.
  await Deno.writeTextFile(token, "three");
  const used = await access.credentials();
  assert.equal(await access.invalidate!(used), true);
  assert.equal((await access.credentials()).headers.Authorization, "Bearer three");
  assert.equal(await access.invalidate!(await access.credentials()), false);
  // A half-written rotation (an empty file) keeps the last good token.
  await Deno.writeTextFile(token, "");
  clock.advance(FILE_REFRESH_MS);
  assert.equal((await access.credentials()).headers.Authorization, "Bearer three");
});

Deno.test("loadKubeconfig reads client certificates from files and inline data", async () => {
  const { createCa, issueCert } = await import("../../util/x509.ts");
  const ca = await createCa("kc-test");
  const leaf = await issueCert({ commonName: "u", client: true }, ca);
  await Deno.writeTextFile(`${dir}/u.crt`, leaf.certPem);
  await Deno.writeTextFile(`${dir}/u.key`, leaf.keyPem);
  await Deno.writeTextFile(`${dir}/ca.crt`, ca.certPem);
  const files = await write(`apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://c.example", certificate-authority: ca.crt } }]
users: [{ name: u, user: { client-certificate: u.crt, client-key: u.key } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`);
  const a = await loadKubeconfig({ kubeconfig: files });
  assert.deepEqual(a.caCerts, [ca.certPem]);
  const ca1 = await a.credentials();
  assert.equal(ca1.cert, leaf.certPem);
  assert.equal(ca1.key, leaf.keyPem);
  const inline = await write(`apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://c.example" } }]
users: [{ name: u, user: { client-certificate-data: ${btoa(leaf.certPem)}, client-key-data: ${
    btoa(leaf.keyPem)
  } } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`);
  const b = await loadKubeconfig({ kubeconfig: inline });
  assert.equal((await b.credentials()).cert, leaf.certPem);
  const missing = await write(`apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://c.example" } }]
users: [{ name: u, user: { client-certificate: nope.crt, client-key: u.key } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`);
  const err = await loadKubeconfig({ kubeconfig: missing }).catch((e) => e);
  assert.ok(err instanceof KubeconfigError, String(err));
  assert.match(
    err.message,
    /^Cannot load kubeconfig ".*": cannot obtain credentials of user "u": cannot read client-certificate ".*nope\.crt": /,
  );
  assert.ok(!err.message.includes("\n"));
});

/** Writes an exec plugin that counts its runs in `<script>.runs` and prints `body`. */
async function plugin(name: string, body: string): Promise<string> {
  const script = `${dir}/${name}.sh`;
  await Deno.writeTextFile(
    script,
    `#!/bin/sh
echo run >> "${script}.runs"
${body}
`,
  );
  await Deno.chmod(script, 0o755);
  return script;
}

async function runs(script: string): Promise<number> {
  return (await Deno.readTextFile(`${script}.runs`).catch(() => "")).split("\n").filter(Boolean)
    .length;
}

function execKubeconfig(script: string, extra = "", apiVersion = "v1"): Promise<string> {
  return write(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: "https://c.example"
    extensions: [{ name: client.authentication.k8s.io/exec, extension: { audience: kubeno } }]
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/${apiVersion}
      command: "${script}"
      args: [--flag]
      env: [{ name: PLUGIN_GREETING, value: hello }]
      interactiveMode: Never
${extra}
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`);
}

Deno.test("an exec plugin runs once, is cached until its expiry, then runs again", async () => {
  const clock = manualClock();
  const expireIn = (ms: number) => new Date(clock.now() + ms).toISOString();
  const script = await plugin(
    "expiring",
    `n=$(wc -l < "$0.runs" | tr -d ' ')
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",' 
printf '"status":{"token":"tok-%s-%s-%s","expirationTimestamp":"%s"}}' "$n" "$1" "$PLUGIN_GREETING" "$(cat "$0.expiry")"`,
  );
  await Deno.writeTextFile(`${script}.expiry`, expireIn(3_600_000));
  const access = await loadKubeconfig({ kubeconfig: await execKubeconfig(script), clock });
  assert.equal(await runs(script), 0, "not run before the first request");
  const [a, b] = await Promise.all([access.credentials(), access.credentials()]);
  assert.equal(a.headers.Authorization, "Bearer tok-1---flag-hello");
  assert.equal(b, a);
  assert.equal(await runs(script), 1, "concurrent first requests share one run");
  clock.advance(3_599_000);
  assert.equal((await access.credentials()).headers.Authorization, "Bearer tok-1---flag-hello");
  assert.equal(await runs(script), 1);
  clock.advance(1_000);
  await Deno.writeTextFile(`${script}.expiry`, expireIn(3_600_000));
  assert.equal((await access.credentials()).headers.Authorization, "Bearer tok-2---flag-hello");
  assert.equal(await runs(script), 2);
  // A 401 runs it again, once, even when several requests were rejected with the same token.
  const used = await access.credentials();
  assert.deepEqual(await Promise.all([access.invalidate!(used), access.invalidate!(used)]), [
    true,
    true,
  ]);
  assert.equal((await access.credentials()).headers.Authorization, "Bearer tok-3---flag-hello");
  assert.equal(await runs(script), 3);
});

Deno.test("an exec plugin gets KUBERNETES_EXEC_INFO and may return a client certificate", async () => {
  const { createCa, issueCert } = await import("../../util/x509.ts");
  const ca = await createCa("kc-exec");
  const leaf = await issueCert({ commonName: "u", client: true }, ca);
  const cred = {
    apiVersion: "client.authentication.k8s.io/v1beta1",
    kind: "ExecCredential",
    status: { clientCertificateData: leaf.certPem, clientKeyData: leaf.keyPem },
  };
  await Deno.writeTextFile(`${dir}/cred.json`, JSON.stringify(cred));
  const script = await plugin(
    "info",
    `echo "$KUBERNETES_EXEC_INFO" > "$0.info"; cat "${dir}/cred.json"`,
  );
  const path = await execKubeconfig(script, "      provideClusterInfo: true", "v1beta1");
  const access = await loadKubeconfig({ kubeconfig: path });
  const creds = await access.credentials();
  assert.equal(creds.cert, leaf.certPem);
  assert.equal(creds.key, leaf.keyPem);
  assert.equal(creds.headers.Authorization, undefined);
  const info = JSON.parse(await Deno.readTextFile(`${script}.info`));
  assert.deepEqual(info, {
    apiVersion: "client.authentication.k8s.io/v1beta1",
    kind: "ExecCredential",
    spec: {
      interactive: false,
      cluster: { server: "https://c.example", config: { audience: "kubeno" } },
    },
  });
});

Deno.test("exec plugin failures are one-line errors naming the plugin", async (t) => {
  const cases: [string, string, string, RegExp][] = [
    [
      "not found",
      `${dir}/does-not-exist`,
      "      installHint: |\n        Install it with: brew install thing\n        More text",
      /exec plugin ".*does-not-exist" not found: Install it with: brew install thing More text$/,
    ],
    [
      "non-zero exit",
      await plugin("fails", 'echo "first" >&2; echo "token expired, log in again" >&2; exit 3'),
      "",
      /exec plugin ".*fails\.sh" failed with exit code 3: token expired, log in again$/,
    ],
    [
      "not JSON",
      await plugin("garbage", "echo hello"),
      "",
      /exec plugin ".*garbage\.sh" printed no ExecCredential JSON: /,
    ],
    [
      "wrong apiVersion",
      await plugin(
        "old",
        `echo '{"apiVersion":"client.authentication.k8s.io/v1alpha1","kind":"ExecCredential","status":{"token":"x"}}'`,
      ),
      "",
      /printed apiVersion "client\.authentication\.k8s\.io\/v1alpha1" kind "ExecCredential"; expected an ExecCredential of client\.authentication\.k8s\.io\/v1$/,
    ],
    [
      "no credential",
      await plugin(
        "empty",
        `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}'`,
      ),
      "",
      /returned neither a token nor a certificate and key$/,
    ],
  ];
  for (const [name, script, extra, want] of cases) {
    await t.step(name, async () => {
      const path = await execKubeconfig(script, extra);
      const access = await loadKubeconfig({ kubeconfig: path });
      const err = await access.credentials().catch((e) => e);
      assert.ok(err instanceof KubeconfigError, String(err));
      assert.ok(
        err.message.startsWith(
          `Cannot load kubeconfig "${path}": cannot obtain credentials of user "u": `,
        ),
        err.message,
      );
      assert.match(err.message, want);
      assert.ok(!err.message.includes("\n"), err.message);
    });
  }
  await t.step("an unsupported apiVersion is refused at load", async () => {
    const path = await execKubeconfig("/bin/true", "", "v1alpha1");
    const err = await loadKubeconfig({ kubeconfig: path }).catch((e) => e);
    assert.match(err.message, /has apiVersion "client\.authentication\.k8s\.io\/v1alpha1"; use/);
  });
});

Deno.test("the in-cluster configuration reads the service-account folder", async () => {
  const sa = `${dir}/serviceaccount`;
  await Deno.mkdir(sa, { recursive: true });
  await Deno.writeTextFile(`${sa}/token`, "sa-token\n");
  await Deno.writeTextFile(`${sa}/namespace`, "operators");
  const saved = ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"].map((k) => Deno.env.get(k));
  try {
    Deno.env.delete("KUBERNETES_SERVICE_HOST");
    assert.equal(inClusterConfig(sa), undefined);
    Deno.env.set("KUBERNETES_SERVICE_HOST", "fd00::1");
    Deno.env.set("KUBERNETES_SERVICE_PORT", "443");
    const data = inClusterConfig(sa)!;
    assert.equal(data.source, "in-cluster");
    assert.equal(data.clusters.get("in-cluster")?.server, "https://[fd00::1]:443");
    assert.equal(data.contexts.get("in-cluster")?.namespace, "operators");
    assert.equal(data.users.get("in-cluster")?.tokenFile, `${sa}/token`);
  } finally {
    for (const [i, k] of ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"].entries()) {
      if (saved[i] === undefined) Deno.env.delete(k);
      else Deno.env.set(k, saved[i]!);
    }
  }
});

/**
 * Runs `code` in a fresh Deno whose import map sends kubeno's client-node specifier to a stub
 * that prints a marker when it is evaluated and then hands over the real package.
 */
async function runWithClientNodeProbe(code: string): Promise<{ stdout: string; stderr: string }> {
  const config = JSON.parse(
    await Deno.readTextFile(fileURLToPath(new URL("../../../deno.json", import.meta.url))),
  );
  const stub = `${dir}/client_node_probe.ts`;
  // A different spelling of the same range, so that the stub's own import is not mapped to it.
  await Deno.writeTextFile(
    stub,
    `console.log("client-node loaded");\nexport * from "npm:@kubernetes/client-node@^1.4.0";\n`,
  );
  const map = `${dir}/probe-map.json`;
  await Deno.writeTextFile(
    map,
    JSON.stringify({ imports: { ...config.imports, [CLIENT_NODE]: stub } }),
  );
  const out = await new Deno.Command(Deno.execPath(), {
    // --quiet: without a lockfile Deno may fetch npm metadata and say "Download …"; a
    // runtime warning such as punycode's is still printed.
    args: ["eval", "--quiet", "--no-config", "--import-map", map, code],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    stdout: new TextDecoder().decode(out.stdout).trim(),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

Deno.test("client-node is loaded only for auth providers, and then without warnings", async () => {
  const mod = JSON.stringify(import.meta.resolve("../../../mod.ts"));
  const kc = JSON.stringify(import.meta.resolve("./kubeconfig.ts"));
  const script = await plugin(
    "probe-exec",
    `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"e"}}'`,
  );
  const native = [await write(two), await execKubeconfig(script)];
  const jwt = [{ alg: "none" }, { exp: Math.floor(Date.now() / 1000) + 3600 }]
    .map((p) => btoa(JSON.stringify(p)).replace(/=+$/, "")).join(".") + ".x";
  const oidc = await write(`apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://c.example" } }]
users: [{ name: u, user: { auth-provider: { name: oidc, config: { id-token: "${jwt}" } } } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`);
  const program = (paths: string[]) =>
    `import * as kubeno from ${mod};
import { loadKubeconfig } from ${kc};
for (const p of ${JSON.stringify(paths)}) {
  const access = await loadKubeconfig({ kubeconfig: p });
  console.log((await access.credentials()).headers.Authorization?.split(".")[0]);
}
console.log("done", typeof kubeno.operator);`;
  const without = await runWithClientNodeProbe(program(native));
  assert.equal(without.stdout, "Bearer t-a\nBearer e\ndone function", without.stderr);
  assert.equal(without.stderr, "");
  const withProvider = await runWithClientNodeProbe(program([oidc]));
  assert.equal(
    withProvider.stdout,
    `client-node loaded\n${jwt.split(".")[0].replace(/^/, "Bearer ")}\ndone function`,
    withProvider.stderr,
  );
  assert.equal(withProvider.stderr, "", "no punycode deprecation warning");
});
