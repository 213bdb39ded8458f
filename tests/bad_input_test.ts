// Bad input, as users give it: broken kubeconfigs and credentials, wrong flags, invalid custom
// resources, malformed admission (and conversion) bodies. Every case checks that the answer
// is one line naming what was wrong and what to do, with the documented exit code (0 ok,
// 1 runtime failure, 2 usage error) — for kubectl and HTTP cases, kubectl's exit code and
// the HTTP status — that nothing was half-applied, and that a running operator keeps running
// and loses nothing. One control plane for the file; cases run in order: refusals before
// anything is installed, then with the operator installed and running.
//
// The test prints the matrix as a markdown table (case, command, message, exit code).
import assert from "node:assert/strict";
import { z } from "zod";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { CustomResourceDefinition } from "../src/core/kinds_cluster.ts";
import { Deployment } from "../src/core/kinds_workloads.ts";
import { defineResource } from "../src/schema/define_resource.ts";
import { createCa, issueCert } from "../src/util/x509.ts";
import { toYaml } from "../src/util/yaml.ts";
import { Myapp } from "../examples/myapp.ts";
import { startExample, userClusterRole, waitFor } from "./_helpers.ts";
import { MYAPP_EXAMPLE as EXAMPLE } from "./_examples.ts";

const CRD = "myapps.apps.kubeno.dev";
const NO_ENDPOINTS = ["--metrics-bind-address=0", "--health-probe-bind-address=0"];
const dec = new TextDecoder();

interface Row {
  id: string;
  command: string;
  message: string;
  code: string;
  test: string;
}
const rows: Row[] = [];

/** kubectl's error, which must be one line (a warning line before it is kubectl's own). */
function oneLine(stderr: string): string {
  const lines = stderr.split("\n").filter((l) => l.trim() && !l.startsWith("Warning: "));
  assert.equal(lines.length, 1, `expected one line on stderr, got:\n${stderr}`);
  return lines[0];
}

/** The operator program as a user runs it; returns the exit code and the error line. */
async function op(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; line: string; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", EXAMPLE, ...args],
    env: {
      NO_COLOR: "1",
      KUBECONFIG: "/nonexistent",
      POD_NAMESPACE: "",
      WATCH_NAMESPACE: "",
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = dec.decode(out.stderr);
  // JSON lines are logs (e.g. waiting for the API server); the error is the plain line.
  const lines = stderr.split("\n").filter((l) => l.trim() && !l.startsWith("{"));
  assert.equal(lines.length, 1, `expected one line on stderr, got:\n${stderr}`);
  assert.doesNotMatch(stderr, /^\s+at .+:\d+:\d+\)?$/m, `a stack trace on stderr:\n${stderr}`);
  assert.doesNotMatch(stderr, /this is a bug/, stderr);
  return { code: out.code, line: lines[0], stdout: dec.decode(out.stdout), stderr };
}

Deno.test("bad input: one line, the documented exit code, nothing half-applied", async (t) => {
  await using cp = await startControlPlane();
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
  const kc = cp.kubeconfigPath;
  const tmp = await Deno.makeTempDir({ prefix: "kubeno-bad-input-" });
  const kubectl = cp.binary("kubectl");

  /** One case: runs, checks code and message, records the row. */
  const check = async (
    id: string,
    name: string,
    command: string,
    run: () => Promise<{ code: number; line: string }>,
    expected: { code: number; message: RegExp },
  ) => {
    await t.step(`${id} ${name}`, async () => {
      const { code, line } = await run();
      assert.match(line, expected.message);
      assert.equal(code, expected.code, line);
      rows.push({ id, command, message: line, code: String(code), test: `${id} ${name}` });
    });
  };
  const cmd = (args: string[], env?: Record<string, string>) => () => op(args, env);
  const crdExists = async () =>
    await admin.get(CustomResourceDefinition, CRD).then(() => true, () => false);

  // --- Kubeconfig and credentials: exit 1, before anything is installed. ---------------
  await check(
    "K0",
    "no kubeconfig at all (no KUBECONFIG, no ~/.kube/config)",
    "HOME=/empty KUBECONFIG= install",
    cmd(["install"], {
      KUBECONFIG: "",
      HOME: tmp,
      // The same Deno cache as this run, which would otherwise move with HOME.
      DENO_DIR: Deno.env.get("DENO_DIR") ??
        `${Deno.env.get("XDG_CACHE_HOME") ?? `${Deno.env.get("HOME")}/.cache`}/deno`,
    }),
    {
      code: 1,
      message:
        /^myapp-operator: Cannot load kubeconfig ".*\/\.kube\/config": no kubeconfig found; set KUBECONFIG, pass a kubeconfig path, or run inside a cluster$/,
    },
  );
  await check(
    "K1",
    "missing kubeconfig file",
    "install --kubeconfig /nonexistent/kubeconfig",
    cmd(["install", "--kubeconfig", "/nonexistent/kubeconfig"]),
    {
      code: 1,
      message:
        /kubeconfig "\/nonexistent\/kubeconfig": file does not exist; pass --kubeconfig PATH or set KUBECONFIG$/,
    },
  );
  await check(
    "K2",
    "KUBECONFIG names no file",
    "KUBECONFIG=/nonexistent/a:/nonexistent/b install",
    cmd(["install"], { KUBECONFIG: "/nonexistent/a:/nonexistent/b" }),
    {
      code: 1,
      message:
        /^myapp-operator: Cannot load kubeconfig "\/nonexistent\/a:\/nonexistent\/b": KUBECONFIG names no existing file; pass --kubeconfig PATH or set KUBECONFIG$/,
    },
  );
  const badYaml = `${tmp}/bad.yaml`;
  await Deno.writeTextFile(badYaml, "apiVersion: v1\nkind: Config\nclusters: [unclosed\n");
  await check(
    "K3",
    "kubeconfig is not valid YAML",
    "install --kubeconfig bad.yaml",
    cmd(["install", "--kubeconfig", badYaml]),
    {
      code: 1,
      message:
        /Cannot parse YAML at line \d+.*; fix the file, or pass another one with --kubeconfig$/,
    },
  );
  const empty = `${tmp}/empty.yaml`;
  await Deno.writeTextFile(empty, "apiVersion: v1\nkind: Config\n");
  await check(
    "K4",
    "kubeconfig without clusters or contexts",
    "install --kubeconfig empty.yaml",
    cmd(["install", "--kubeconfig", empty]),
    {
      code: 1,
      message:
        /^myapp-operator: Cannot load kubeconfig ".*\/empty\.yaml": it defines no clusters and no contexts; fix the file, or pass another one with --kubeconfig$/,
    },
  );
  await check(
    "K5",
    "unknown context",
    "install --kubeconfig admin.kubeconfig --context nope",
    cmd(["install", "--kubeconfig", kc, "--context", "nope"]),
    {
      code: 1,
      message:
        /context "nope" does not exist \(contexts: "kubeno-test"\); pass one of its contexts with --context$/,
    },
  );
  const adminYaml = await Deno.readTextFile(kc);
  const other = await createCa("some-other-ca");
  const untrusted = `${tmp}/untrusted.kubeconfig`;
  await Deno.writeTextFile(
    untrusted,
    adminYaml.replace(
      /certificate-authority-data: \S+/,
      `certificate-authority-data: ${btoa(other.certPem)}`,
    ),
  );
  await check(
    "K6",
    "server certificate not signed by the kubeconfig's CA (install)",
    "install --kubeconfig untrusted.kubeconfig",
    cmd(["install", "--kubeconfig", untrusted]),
    {
      code: 1,
      message:
        /invalid peer certificate: UnknownIssuer; the server's certificate is not trusted: check the kubeconfig's certificate-authority/,
    },
  );
  await check(
    "K7",
    "server certificate not signed by the kubeconfig's CA (run: no waiting)",
    "run --kubeconfig untrusted.kubeconfig",
    cmd(["run", "--kubeconfig", untrusted, ...NO_ENDPOINTS]),
    {
      code: 1,
      message: /invalid peer certificate: UnknownIssuer; the server's certificate is not trusted/,
    },
  );
  const expired = await cp.writeKubeconfig({
    user: "expired",
    groups: ["system:masters"],
    notBefore: new Date(Date.now() - 2 * 86_400_000),
    validForMs: 86_400_000,
  });
  await check(
    "K8",
    "expired client certificate",
    "install --kubeconfig expired.kubeconfig",
    cmd(["install", "--kubeconfig", expired]),
    { code: 1, message: /Unauthorized.*; the kubeconfig's credentials were rejected; renew them$/ },
  );
  const token = `${tmp}/token.kubeconfig`;
  await Deno.writeTextFile(
    token,
    adminYaml.replace(/client-certificate-data: \S+\s+client-key-data: \S+/, "token: not-a-token"),
  );
  await check(
    "K9",
    "401: a token the API server does not know",
    "install --kubeconfig token.kubeconfig",
    cmd(["install", "--kubeconfig", token]),
    { code: 1, message: /Unauthorized.*; the kubeconfig's credentials were rejected; renew them$/ },
  );
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const deadPort = closed.addr.port;
  closed.close();
  const unreachable = `${tmp}/unreachable.kubeconfig`;
  await Deno.writeTextFile(
    unreachable,
    adminYaml.replace(/server: \S+/, `server: https://127.0.0.1:${deadPort}`),
  );
  await check(
    "K10",
    "unreachable server",
    "install --kubeconfig unreachable.kubeconfig --timeout=1s",
    cmd(["install", "--kubeconfig", unreachable, "--timeout=1s"]),
    {
      code: 1,
      message:
        /^myapp-operator: Gave up after waiting [\d.]+s for the Kubernetes API server \(--timeout=1s\): .*127\.0\.0\.1:\d+.*; check that the cluster is running/,
    },
  );
  await check(
    "K10b",
    "unreadable --webhook-cert-path with the server unreachable: local configuration first",
    "run --kubeconfig unreachable.kubeconfig --webhook-cert-path /no/such/dir",
    async () => {
      const r = await op([
        ...["run", "--kubeconfig", unreachable, "--webhook-cert-path", "/no/such/dir"],
        ...NO_ENDPOINTS,
        "--startup-timeout=3s",
      ]);
      // At once: before any wait for the API server (which logs "Waiting for ..." at once).
      assert.doesNotMatch(r.stderr, /Waiting for the Kubernetes API server/, r.stderr);
      return r;
    },
    {
      code: 1,
      message:
        /^myapp-operator: Cannot read webhook certificate from "\/no\/such\/dir": No such file or directory \(os error 2\).*\(expected tls\.crt and tls\.key\); --webhook-cert-path takes a directory holding tls\.crt and tls\.key$/,
    },
  );
  const notUrl = `${tmp}/not-url.kubeconfig`;
  await Deno.writeTextFile(notUrl, adminYaml.replace(/server: \S+/, "server: not a url"));
  await check(
    "K11",
    "server is not a URL",
    "install --kubeconfig not-url.kubeconfig",
    cmd(["install", "--kubeconfig", notUrl]),
    { code: 1, message: /server "not a url" is not a valid URL; fix the file/ },
  );
  const nobody = await cp.createUser("nobody");
  await check(
    "K12",
    "403 during install: no permissions",
    "install --kubeconfig nobody.kubeconfig",
    cmd(["install", "--kubeconfig", nobody]),
    { code: 1, message: /forbidden.*; grant the permission/i },
  );
  // May write CRDs and read webhook configurations, but not write them: the dry run of the
  // webhook configuration is refused, so the CRD is not applied either.
  const rbac = userClusterRole("crd-writer", [
    {
      apiGroups: ["apiextensions.k8s.io"],
      resources: ["customresourcedefinitions"],
      verbs: ["get", "list", "create", "patch", "update"],
    },
    {
      apiGroups: ["admissionregistration.k8s.io"],
      resources: ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
      verbs: ["get"],
    },
  ]);
  await Deno.writeTextFile(`${tmp}/rbac.yaml`, toYaml(rbac));
  assert.equal((await cp.kubectl("apply", "-f", `${tmp}/rbac.yaml`)).code, 0);
  const crdWriter = await cp.createUser("crd-writer");
  await check(
    "K13",
    "403 during install: CRDs allowed, webhook configurations not",
    "install --kubeconfig crd-writer.kubeconfig",
    cmd(["install", "--kubeconfig", crdWriter]),
    { code: 1, message: /validatingwebhookconfigurations.*forbidden.*; grant the permission/i },
  );
  // An invalid object: the second of two CRDs carries a CEL rule the API server cannot
  // compile. install's dry run of every object refuses it, so the first is not applied either.
  const invalidOp = `${tmp}/invalid_operator.ts`;
  const src = (f: string) => JSON.stringify(new URL(`../src/${f}`, import.meta.url).href);
  await Deno.writeTextFile(
    invalidOp,
    `import { z } from "zod";
import { defineResource } from ${src("schema/define_resource.ts")};
import { operator } from ${src("operator/operator.ts")};
const Good = defineResource({ group: "invalid.kubeno.dev", version: "v1", kind: "Good",
  spec: z.object({ n: z.int() }) });
const Bad = defineResource({ group: "invalid.kubeno.dev", version: "v1", kind: "Bad",
  spec: z.object({ n: z.int() }), validations: ["self.n >>> 1"] });
await operator({ name: "invalid-operator", version: "1.0.0", controllers: [],
  resources: [Good, Bad] }).main();
`,
  );
  await check(
    "K13b",
    "install of an invalid object (a CEL rule that does not compile): dry-run first",
    "install --kubeconfig admin.kubeconfig # the second CRD is invalid",
    async () => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          ...[
            "run",
            "-A",
            "--quiet",
            "--config",
            new URL("../deno.json", import.meta.url).pathname,
          ],
          ...[invalidOp, "install", "--kubeconfig", kc],
        ],
        env: { NO_COLOR: "1", KUBECONFIG: "/nonexistent", POD_NAMESPACE: "", WATCH_NAMESPACE: "" },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = dec.decode(out.stderr);
      const lines = stderr.split("\n").filter((l) => l.trim() && !l.startsWith("{"));
      assert.equal(lines.length, 1, stderr);
      return { code: out.code, line: lines[0] };
    },
    {
      code: 1,
      message:
        /^invalid-operator: Cannot apply CustomResourceDefinition "bads\.invalid\.kubeno\.dev": Invalid: .*x-kubernetes-validations\[0\]\.rule: Invalid value: .*compilation failed/,
    },
  );
  await t.step("nothing was half-applied by the refused installs", async () => {
    assert.equal(await crdExists(), false, "no CRD was applied");
    const good = await admin.get(CustomResourceDefinition, "goods.invalid.kubeno.dev").then(
      () => true,
      () => false,
    );
    assert.equal(good, false, "the valid CRD before the invalid one was not applied");
  });
  await check(
    "K14",
    "run before install: the kind is not served",
    "run --kubeconfig admin.kubeconfig",
    cmd(["run", "--kubeconfig", kc, ...NO_ENDPOINTS, "--webhook-port=0"]),
    { code: 1, message: /does not serve Myapp.*run "myapp-operator install" first$/ },
  );

  // --- Flags: exit 2, nothing contacted. -------------------------------------------------
  const usage = (id: string, name: string, args: string[], message: RegExp) =>
    check(id, name, args.join(" "), cmd(args), {
      code: 2,
      message: new RegExp(`${message.source}.*; run "myapp-operator( \\w+)? --help" for usage$`),
    });
  await usage("F1", "unknown flag", ["run", "--frobnicate"], /Unknown flag "--frobnicate"/);
  await usage("F2", "unknown command", ["frobnicate"], /Unknown command "frobnicate"/);
  await usage("F3", "unexpected argument", ["install", "extra"], /Unexpected argument "extra"/);
  await usage(
    "F4",
    "missing value",
    ["install", "--kubeconfig"],
    /Flag "--kubeconfig" needs a value/,
  );
  await usage(
    "F5",
    "bind address without a port",
    ["run", "--metrics-bind-address=localhost"],
    /Flag "--metrics-bind-address" takes HOST:PORT, :PORT or 0, not "localhost"/,
  );
  await usage(
    "F6",
    "bind port out of range",
    ["run", "--health-probe-bind-address=:70000"],
    /Flag "--health-probe-bind-address" takes HOST:PORT, :PORT or 0, not ":70000"/,
  );
  await usage(
    "F7",
    "webhook port out of range",
    ["run", "--webhook-port=70000"],
    /Flag "--webhook-port" takes a port number, not "70000"/,
  );
  await usage(
    "F8",
    "bad duration",
    ["run", "--leader-elect-lease-duration=5x"],
    /Flag "--leader-elect-lease-duration" takes a duration such as 60s, not "5x"/,
  );
  await usage(
    "F9",
    "bad duration (install)",
    ["install", "--timeout=soon"],
    /Flag "--timeout" takes a duration such as 60s, not "soon"/,
  );
  await usage(
    "F10",
    "bad boolean",
    ["run", "--leader-elect=maybe"],
    /Flag "--leader-elect" takes true or false, not "maybe"/,
  );
  await usage(
    "F11",
    "bad log level",
    ["--log-level", "loud", "manifests"],
    /Flag "--log-level" takes one of debug, info, warning, error, not "loud"/,
  );
  await usage(
    "F12",
    "bad log format",
    ["--log-format", "xml", "manifests"],
    /Flag "--log-format" takes one of json, pretty, not "xml"/,
  );
  await usage(
    "F13",
    "conflicting flags: a metrics certificate with plain HTTP",
    ["run", "--metrics-secure=false", "--metrics-cert-path=/tmp"],
    /Flags "--metrics-cert-path" and "--metrics-secure=false" conflict/,
  );
  await usage(
    "F14",
    "conflicting flags: metrics and probes on one port",
    ["run", "--metrics-bind-address=:9000", "--health-probe-bind-address=127.0.0.1:9000"],
    /Flags "--metrics-bind-address" and "--health-probe-bind-address" both use port 9000/,
  );
  await usage(
    "F15",
    "conflicting flags: webhooks on the probes' default port",
    ["run", "--webhook-port=8081"],
    /Flags "--health-probe-bind-address" and "--webhook-port" both use port 8081/,
  );
  await usage(
    "F16",
    "leader-election durations out of order",
    [
      "run",
      "--leader-elect",
      "--leader-elect-lease-duration=1s",
      "--leader-elect-renew-deadline=2s",
    ],
    /Leader election needs lease duration > renew deadline > 1\.2 × retry period/,
  );
  await usage(
    "F17",
    "invalid namespace",
    ["run", "--namespace=Bad_NS"],
    /Flag "--namespace" takes a namespace name .*, not "Bad_NS"/,
  );
  await usage(
    "F18",
    "invalid watch namespace",
    ["run", "--watch-namespace=ok,Bad_NS"],
    /Flag "--watch-namespace" takes namespace names .*, not "Bad_NS"/,
  );
  await usage(
    "F20",
    "invalid memory limit",
    ["run", "--memory-limit=256MB"],
    /Flag "--memory-limit" takes a quantity such as 256Mi, 1Gi or bytes, or "none", not "256MB"/,
  );
  const file = `${tmp}/a-file`;
  await Deno.writeTextFile(file, "");
  await usage(
    "F19",
    "--out names a file",
    ["manifests", "--out", file],
    /Flag "--out" takes a directory, and ".*a-file" is a file/,
  );

  // --- Installed; runtime refusals: exit 1. -----------------------------------------------
  await t.step("install (the operator's CRD and webhook configurations)", async () => {
    const r = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", EXAMPLE, "install", "--kubeconfig", kc],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(r.code, 0, dec.decode(r.stderr));
  });
  const holder = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  await check(
    "R1",
    "probe port already in use",
    "run --health-probe-bind-address=127.0.0.1:<taken>",
    cmd([
      "run",
      "--kubeconfig",
      kc,
      "--metrics-bind-address=0",
      `--health-probe-bind-address=127.0.0.1:${holder.addr.port}`,
      "--webhook-port=0",
    ]),
    {
      code: 1,
      message:
        /Cannot serve health probes on "127\.0\.0\.1:\d+": the address is already in use; stop what holds the port/,
    },
  );
  await check(
    "R2",
    "webhook port already in use",
    "run --webhook-port=<taken>",
    cmd(["run", "--kubeconfig", kc, ...NO_ENDPOINTS, `--webhook-port=${holder.addr.port}`]),
    {
      code: 1,
      message: /Cannot serve admission webhooks on port \d+: the address is already in use/,
    },
  );
  holder.close();
  await check(
    "R3",
    "webhook certificate directory missing",
    "run --webhook-cert-path=/nonexistent",
    cmd(["run", "--kubeconfig", kc, ...NO_ENDPOINTS, "--webhook-cert-path=/nonexistent"]),
    {
      code: 1,
      message:
        /Cannot read webhook certificate from "\/nonexistent".*; --webhook-cert-path takes a directory holding tls\.crt and tls\.key$/,
    },
  );
  const mismatched = `${tmp}/mismatched`;
  await Deno.mkdir(mismatched);
  const ca = await createCa("bad-input-ca");
  const leafA = await issueCert({ commonName: "a", ipAddresses: ["127.0.0.1"], server: true }, ca);
  const leafB = await issueCert({ commonName: "b", ipAddresses: ["127.0.0.1"], server: true }, ca);
  await Deno.writeTextFile(`${mismatched}/tls.crt`, leafA.certPem);
  await Deno.writeTextFile(`${mismatched}/tls.key`, leafB.keyPem);
  await check(
    "R4",
    "webhook certificate and key do not match",
    "run --webhook-cert-path=mismatched/",
    cmd(["run", "--kubeconfig", kc, ...NO_ENDPOINTS, `--webhook-cert-path=${mismatched}`]),
    {
      code: 1,
      message: /Cannot use webhook certificate from ".*mismatched": .*key does not match/,
    },
  );

  // --- Custom resources, with the operator running: kubectl refuses, the operator goes on. --
  const operator = startExample(EXAMPLE, [
    "--kubeconfig",
    kc,
    ...NO_ENDPOINTS,
    "--webhook-port=0",
  ], { NO_COLOR: "1" });
  try {
    // The webhook is registered once a valid object is admitted and defaulted.
    await waitFor(async () => {
      const app = await admin.apply(Myapp, {
        apiVersion: Myapp.apiVersion,
        kind: "Myapp",
        metadata: { name: "valid", namespace: "default" },
        spec: { image: "nginx", replicas: 1 },
      } as never);
      return app.spec.port === 8080;
    }, { timeoutMs: 60_000, what: `the local run to serve webhooks; log:\n${operator.logs()}` });

    const apply = async (name: string, spec: Record<string, unknown>, strict = false) => {
      const file = `${tmp}/${name}.yaml`;
      await Deno.writeTextFile(
        file,
        toYaml([{
          apiVersion: Myapp.apiVersion,
          kind: "Myapp",
          metadata: { name, namespace: "default" },
          spec,
        }]),
      );
      const out = await new Deno.Command(kubectl, {
        args: [
          "--kubeconfig",
          kc,
          "apply",
          ...(strict ? ["--validate=strict"] : []),
          "-f",
          file,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      return { code: out.code, line: oneLine(dec.decode(out.stderr)) };
    };
    const invalid = (
      id: string,
      name: string,
      spec: Record<string, unknown>,
      message: RegExp,
      strict = false,
    ) =>
      check(
        id,
        name,
        `kubectl apply${strict ? " --validate=strict" : ""} -f myapp.yaml # spec: ${
          JSON.stringify(spec)
        }`,
        async () => {
          const r = await apply(`bad-${id.toLowerCase()}`, spec, strict);
          const stored = await admin.get(Myapp, `bad-${id.toLowerCase()}`, {
            namespace: "default",
          }).then(() => true, () => false);
          assert.equal(stored, false, "nothing stored");
          return r;
        },
        { code: 1, message },
      );
    await invalid(
      "C1",
      "replicas of the wrong type",
      { image: "nginx", replicas: "three" },
      /spec\.replicas: Invalid value: "string": spec\.replicas in body must be of type integer/,
    );
    await invalid(
      "C2",
      "replicas below the minimum",
      { image: "nginx", replicas: -1 },
      /spec\.replicas in body should be greater than or equal to 0/,
    );
    await invalid("C3", "image missing", { replicas: 1 }, /spec\.image: Required value/);
    await invalid(
      "C4",
      "image empty",
      { image: "", replicas: 1 },
      /spec\.image in body should be at least 1 chars long/,
    );
    await invalid(
      "C5",
      "port above the maximum",
      { image: "nginx", port: 70000 },
      /spec\.port in body should be less than or equal to 65535/,
    );
    await invalid(
      "C6",
      "unknown field (kubectl --validate=strict)",
      { image: "nginx", colour: "blue" },
      /unknown field "spec\.colour"/,
      true,
    );
    await invalid(
      "C7",
      "duplicate key in a map-list (env names)",
      { image: "nginx", env: [{ name: "A", value: "1" }, { name: "A", value: "2" }] },
      /spec\.env\[1\]: Duplicate value/,
    );
    await invalid(
      "C8",
      "refused by the validating webhook",
      { image: "nginx", replicas: 101 },
      /admission webhook "vmyapp\.apps\.kubeno\.dev" denied the request: spec\.replicas: must be at most 100, got 101/,
    );

    // CEL rules, on a resource that declares them.
    const Quota = defineResource({
      group: "bad.kubeno.dev",
      version: "v1",
      kind: "Quota",
      spec: z.object({ min: z.int(), max: z.int(), region: z.string() }),
      validations: [
        { rule: "self.min <= self.max", message: "min must not exceed max" },
        { rule: "self.region == oldSelf.region", message: "region is immutable" },
      ],
    });
    await admin.apply(CustomResourceDefinition, Quota.crd() as never, { force: true });
    await waitFor(
      () => admin.list(Quota, { namespace: "default", limit: 1 }).then(() => true),
      { what: "quotas to be served" },
    );
    const quota = async (name: string, spec: Record<string, unknown>) => {
      const f = `${tmp}/${name}.yaml`;
      await Deno.writeTextFile(
        f,
        toYaml([{
          apiVersion: Quota.apiVersion,
          kind: "Quota",
          metadata: { name, namespace: "default" },
          spec,
        }]),
      );
      const out = await new Deno.Command(kubectl, {
        args: ["--kubeconfig", kc, "apply", "-f", f],
        stdout: "piped",
        stderr: "piped",
      }).output();
      return { code: out.code, line: out.code === 0 ? "" : oneLine(dec.decode(out.stderr)) };
    };
    await check(
      "C9",
      "CEL rule violated",
      'kubectl apply -f quota.yaml # spec: {"min":5,"max":1,...}',
      () => quota("q1", { min: 5, max: 1, region: "eu" }),
      {
        code: 1,
        message: /The Quota "q1" is invalid: spec: Invalid value: .*min must not exceed max/,
      },
    );
    assert.equal((await quota("q2", { min: 1, max: 5, region: "eu" })).code, 0);
    await check(
      "C10",
      "CEL transition rule violated (immutable field)",
      'kubectl apply -f quota.yaml # spec.region: "eu" -> "us"',
      () => quota("q2", { min: 1, max: 5, region: "us" }),
      { code: 1, message: /region is immutable/ },
    );

    // --- Admission and conversion bodies, straight to the operator's webhook server. --------
    const cfg = await admin.request<
      { webhooks: { clientConfig: { url: string; caBundle: string } }[] }
    >(
      "GET",
      "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/myapp-operator",
    );
    const validateUrl = cfg.webhooks[0].clientConfig.url;
    const base = new URL(validateUrl).origin;
    using http = Deno.createHttpClient({ caCerts: [atob(cfg.webhooks[0].clientConfig.caBundle)] });
    const post = async (url: string, body: string, method = "POST") => {
      const res = await fetch(url, {
        method,
        client: http,
        body: method === "POST" ? body : undefined,
        headers: { "content-type": "application/json" },
      });
      const text = await res.text();
      if (res.headers.get("content-type")?.includes("application/json")) {
        const review = JSON.parse(text);
        const r = review.response;
        return {
          code: res.status,
          line: `allowed=${r.allowed} code=${r.status?.code} ${r.status?.message}`,
        };
      }
      return { code: res.status, line: text.trim() };
    };
    const review = (request: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request,
        ...extra,
      });
    const gvk = { group: "apps.kubeno.dev", version: "v1alpha1", kind: "Myapp" };
    const body = (
      id: string,
      name: string,
      text: string,
      status: number,
      message: RegExp,
      url = validateUrl,
      method = "POST",
    ) =>
      check(
        id,
        name,
        `${method} ${new URL(url).pathname} ${text.length > 60 ? `${text.slice(0, 57)}...` : text}`,
        () => post(url, text, method),
        {
          code: status,
          message,
        },
      );
    await body(
      "A1",
      "body is not JSON",
      "{not json",
      400,
      /AdmissionReview body is not valid JSON/,
    );
    await body(
      "A2",
      "JSON but not an object",
      "[1,2]",
      400,
      /AdmissionReview must be a JSON object/,
    );
    await body(
      "A3",
      "wrong apiVersion",
      JSON.stringify({
        apiVersion: "admission.k8s.io/v1beta1",
        kind: "AdmissionReview",
        request: { uid: "u" },
      }),
      200,
      /allowed=false code=400 Unsupported AdmissionReview apiVersion "admission\.k8s\.io\/v1beta1"/,
    );
    await body(
      "A4",
      "no request",
      JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" }),
      400,
      /AdmissionReview has no request/,
    );
    await body(
      "A5",
      "request without uid",
      review({ operation: "CREATE", kind: gvk }),
      400,
      /AdmissionReview request has no uid/,
    );
    await body(
      "A6",
      "unknown operation",
      review({ uid: "u6", operation: "PATCH", kind: gvk, object: { metadata: {} } }),
      200,
      /allowed=false code=400 Unknown operation "PATCH"/,
    );
    await body(
      "A7",
      "CREATE without object",
      review({ uid: "u7", operation: "CREATE", kind: gvk }),
      200,
      /allowed=false code=400 AdmissionReview request\.object is missing for CREATE/,
    );
    await body(
      "A8",
      "UPDATE without oldObject",
      review({
        uid: "u8",
        operation: "UPDATE",
        kind: gvk,
        object: { metadata: { name: "x" }, spec: { image: "i", replicas: 1 } },
      }),
      200,
      /allowed=false code=400 AdmissionReview request\.oldObject is missing for UPDATE/,
    );
    await body(
      "A9",
      "object without metadata",
      review({ uid: "u9", operation: "CREATE", kind: gvk, object: "a string" }),
      200,
      /allowed=false code=400 AdmissionReview request\.object must be an object with metadata/,
    );
    await body(
      "A10",
      "request.kind incomplete",
      review({
        uid: "u10",
        operation: "CREATE",
        kind: { kind: "Myapp" },
        object: { metadata: {} },
      }),
      200,
      /allowed=false code=400 AdmissionReview request\.kind must have group, version, kind/,
    );
    await body(
      "A11",
      "body over 7 MiB",
      review({
        uid: "u11",
        operation: "CREATE",
        kind: gvk,
        object: { metadata: {}, pad: "x".repeat(7 * 1024 * 1024) },
      }),
      413,
      /AdmissionReview body is larger than the limit of 7340032 bytes/,
    );
    await body(
      "A12",
      "GET instead of POST",
      "",
      405,
      /Method "GET" is not allowed: send a POST with an AdmissionReview/,
      validateUrl,
      "GET",
    );
    await body(
      "A13",
      "a path nothing is served on",
      review({ uid: "u13" }),
      404,
      /No webhook is served on path "\/nowhere"/,
      `${base}/nowhere`,
    );
    const conversion = JSON.stringify({
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "ConversionReview",
      request: { uid: "c1", desiredAPIVersion: "apps.kubeno.dev/v1", objects: [] },
    });
    await body(
      "V1",
      "ConversionReview sent to an admission path",
      conversion,
      200,
      /allowed=false code=400 Unsupported AdmissionReview apiVersion "apiextensions\.k8s\.io\/v1"/,
    );
    await body(
      "V2",
      "ConversionReview to /convert (Myapp has one version: no conversion webhook)",
      conversion,
      404,
      /No webhook is served on path "\/convert"/,
      `${base}/convert`,
    );

    await t.step("the operator kept running and lost nothing", async () => {
      assert.equal(
        operator.exited(),
        undefined,
        `the operator exited during the bad inputs:\n${operator.logs()}`,
      );
      const dep = await waitFor(
        () => admin.get(Deployment, "valid", { namespace: "default" }).catch(() => undefined),
        { what: "the valid Myapp's Deployment" },
      );
      assert.equal(dep.metadata.ownerReferences?.[0]?.name, "valid");
      const after = await admin.apply(Myapp, {
        apiVersion: Myapp.apiVersion,
        kind: "Myapp",
        metadata: { name: "after", namespace: "default" },
        spec: { image: "nginx", replicas: 2 },
      } as never);
      assert.equal(after.spec.port, 8080, "still defaulted by the webhook");
      await waitFor(
        () => admin.get(Deployment, "after", { namespace: "default" }).catch(() => undefined),
        { what: "the later Myapp reconciled" },
      );
    });
  } finally {
    await operator.stop("SIGTERM");
    await Deno.remove(tmp, { recursive: true });
  }

  const cell = (s: string) => s.replaceAll("|", "\\|").replaceAll("\n", " ");
  console.log(
    [
      "| case | command | message | exit code | test |",
      "|---|---|---|---|---|",
      ...rows.map((r) =>
        `| ${r.id} | \`${cell(r.command)}\` | ${cell(r.message)} | ${r.code} | ${cell(r.test)} |`
      ),
    ].join("\n"),
  );
  assert.ok(rows.length >= 30, `${rows.length} cases`);
});
