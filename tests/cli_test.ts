// kubeno's own CLI as users run it: spawns the real `deno run -A cli.ts ...`. A project made
// by `init` (importing this checkout) passes its own `deno task check` and its own test
// against a real control plane, before and after `create resource`; bad input exits 2 with
// one line; `compile` says why when it cannot get denort. The permissions `compile` grants
// are verified by running the fixture operator under exactly them (not -A) against a real
// control plane: install, run with leader election until it reconciles, and the webhook
// server.
import assert from "node:assert/strict";
import { type ControlPlane, startControlPlane } from "../testing.ts";
import { localKubeconfigPaths, operatorPermissions } from "../src/tool/compile.ts";
import { freePort } from "../src/testing/process.ts";
import { COMPILE_SKIP_REASON, denortAvailable, denortDownloadable, waitFor } from "./_helpers.ts";

const REPO = new URL("../", import.meta.url);
const CLI = new URL("cli.ts", REPO).pathname;
const FIXTURE = new URL("tests/fixtures/widget_operator.ts", REPO).pathname;
const CONFIG = new URL("deno.json", REPO).pathname;
const dec = new TextDecoder();

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function deno(
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; clearEnv?: boolean } = {},
): Promise<Run> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: options.cwd,
    env: { NO_COLOR: "1", ...options.env },
    clearEnv: options.clearEnv,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

function kubeno(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  return deno(["run", "-A", "--quiet", CLI, ...args], options);
}

/** Asserts a usage error: exit 2, one line on stderr, no stack; returns the line. */
function usageError(run: Run): string {
  assert.equal(run.code, 2, `expected exit 2, got ${run.code}:\n${run.stderr}`);
  const lines = run.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, `expected one line on stderr, got:\n${run.stderr}`);
  assert.match(lines[0], /^kubeno: /);
  return lines[0];
}

function ok(run: Run, what: string): Run {
  assert.equal(run.code, 0, `${what} exited ${run.code}:\n${run.stdout}\n${run.stderr}`);
  return run;
}

async function tempDir(): Promise<string & AsyncDisposable> {
  const dir = await Deno.makeTempDir({ prefix: "kubeno-cli-" });
  return Object.assign(new String(dir) as string, {
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }).catch(() => {}),
  });
}

Deno.test("help, version and unknown commands", async () => {
  const help = ok(await kubeno(["--help"]), "--help");
  for (const cmd of ["init", "create resource", "compile", "version", "help"]) {
    assert.match(help.stdout, new RegExp(`^  ${cmd} `, "m"));
  }
  for (const args of [["init", "--help"], ["create", "resource", "--help"], ["compile", "-h"]]) {
    assert.match(ok(await kubeno(args), args.join(" ")).stdout, /^Usage: kubeno /);
  }
  const denoJson = JSON.parse(await Deno.readTextFile(CONFIG));
  assert.equal(ok(await kubeno(["version"]), "version").stdout, `${denoJson.version}\n`);
  assert.equal(
    usageError(await kubeno(["frobnicate"])),
    'kubeno: Unknown command "frobnicate"; run "kubeno help" for usage',
  );
  assert.match(
    usageError(await kubeno(["init", "x", "--bogus"])),
    /Unknown flag "--bogus"; run "kubeno init --help"/,
  );
  assert.match(usageError(await kubeno(["init"])), /needs a directory/);
  assert.match(usageError(await kubeno(["create", "api"])), /only "kubeno create resource"/);
});

Deno.test("init refuses invalid names with exit 2, naming the rule, and writes nothing", async () => {
  await using tmp = await tempDir();
  const dir = `${tmp}/p`;
  const cases: [string[], RegExp][] = [
    [["--group", "apps"], /--group "apps".*DNS-1123 subdomain with at least one dot/],
    [["--group", "Apps.Example.com"], /--group "Apps.Example.com".*DNS-1123 subdomain/],
    [["--group", "a_b.example.com"], /DNS-1123 subdomain/],
    [["--version", "1"], /--version "1".*v\\d\+\(\(alpha\|beta\)\\d\+\)\?/],
    [["--version", "v1gamma1"], /--version "v1gamma1".*must match/],
    [["--kind", "myApp"], /--kind "myApp".*UpperCamelCase/],
    [["--kind", "My-App"], /--kind "My-App".*UpperCamelCase/],
    [["--kind", "Promise"], /--kind "Promise": it is a JavaScript global/],
    [["--name", "My_Operator"], /--name "My_Operator".*DNS-1123 label/],
    [["--kubeno", "/nonexistent/kubeno"], /--kubeno "\/nonexistent\/kubeno": cannot read/],
  ];
  for (const [flags, rule] of cases) {
    assert.match(usageError(await kubeno(["init", dir, ...flags])), rule, flags.join(" "));
  }
  await assert.rejects(Deno.stat(dir), Deno.errors.NotFound);
});

Deno.test("init refuses a non-empty directory without --force", async () => {
  await using tmp = await tempDir();
  await Deno.writeTextFile(`${tmp}/notes.txt`, "mine");
  await Deno.writeTextFile(`${tmp}/operator.ts`, "// mine");
  const line = usageError(await kubeno(["init", String(tmp), "--kubeno", REPO.href]));
  assert.match(line, /is not empty; .*pass --force/);
  assert.equal(await Deno.readTextFile(`${tmp}/operator.ts`), "// mine");

  ok(await kubeno(["init", String(tmp), "--force", "--kubeno", REPO.href]), "init --force");
  assert.match(await Deno.readTextFile(`${tmp}/operator.ts`), /kubeno:controllers/);
  assert.equal(await Deno.readTextFile(`${tmp}/notes.txt`), "mine");
});

Deno.test("init makes a project that passes its own check and test; create resource keeps it so", async (t) => {
  await using tmp = await tempDir();
  const dir = `${tmp}/shop-operator`;
  const init = ok(
    await kubeno([
      "init",
      dir,
      ...["--group", "shop.example.com", "--version", "v1beta1", "--kind", "Shop"],
      ...["--kubeno", REPO.href],
    ]),
    "init",
  );
  assert.match(init.stdout, /Created shop-operator \(shop.example.com\/v1beta1, Kind=Shop\)/);
  const config = JSON.parse(await Deno.readTextFile(`${dir}/deno.json`));
  assert.equal(config.name, "shop-operator");
  assert.equal(config.imports["@kubeno/kubeno"], new URL("mod.ts", REPO).href);
  assert.equal(config.imports["@kubeno/kubeno/testing"], new URL("testing.ts", REPO).href);
  assert.deepEqual(Object.keys(config.tasks).sort(), [
    "chart",
    "check",
    "compile",
    "dev",
    "manifests",
    "test",
  ]);
  const dockerfile = await Deno.readTextFile(`${dir}/Dockerfile`);
  for (const flag of operatorPermissions()) assert.ok(dockerfile.includes(flag), flag);
  assert.match(dockerfile, /distroless\/cc-debian12:nonroot[\s\S]*USER 65532:65532/);
  assert.match(dockerfile, /^ENV MALLOC_MMAP_THRESHOLD_=1048576$/m);

  await t.step("deno check, lint and fmt --check pass", async () => {
    ok(await deno(["task", "check"], { cwd: dir }), "deno task check");
  });
  await t.step("its own test passes against a real control plane", async () => {
    const run = ok(await deno(["test", "-A"], { cwd: dir }), "deno test -A");
    assert.match(run.stdout, /1 passed \| 0 failed/);
  });
  await t.step("manifests print the CRD", async () => {
    const run = ok(await deno(["task", "manifests"], { cwd: dir }), "deno task manifests");
    assert.match(run.stdout, /name: shops\.shop\.example\.com/);
  });
  await t.step("deno task chart writes a Helm chart holding the CRD", async () => {
    const run = ok(await deno(["task", "chart"], { cwd: dir }), "deno task chart");
    assert.match(run.stdout, /Helm chart shop-operator written to chart \(\d+ files\)/);
    const crd = await Deno.readTextFile(`${dir}/chart/crds/shops.shop.example.com.yaml`);
    assert.match(crd, /kind: CustomResourceDefinition/);
    assert.match(await Deno.readTextFile(`${dir}/chart/Chart.yaml`), /name: shop-operator/);
  });

  const before = await Deno.readTextFile(`${dir}/operator.ts`);
  await t.step("create resource adds a file and two lines at the markers", async () => {
    const args = ["create", "resource", "--group", "shop.example.com", "--version", "v1"];
    const run = ok(await kubeno([...args, "--kind", "Order", "--dir", dir]), "create resource");
    assert.match(run.stdout, /Created resources\/order\.ts and samples\/order\.yaml/);
    const after = await Deno.readTextFile(`${dir}/operator.ts`);
    const added = after.split("\n").filter((l) => !before.split("\n").includes(l));
    assert.deepEqual(added, [
      'import { orderController } from "./resources/order.ts";',
      "    orderController,",
    ]);
    assert.equal(after.split("\n").length, before.split("\n").length + 2);

    assert.match(
      usageError(await kubeno([...args, "--kind", "Order", "--dir", dir])),
      /orderController/,
    );
    assert.match(
      usageError(await kubeno([...args, "--kind", "order", "--dir", dir])),
      /UpperCamelCase/,
    );
    assert.match(usageError(await kubeno([...args.slice(0, 4), "--dir", dir])), /needs --version/);
    await Deno.writeTextFile(`${dir}/resources/refund.ts`, "// mine");
    assert.match(
      usageError(await kubeno([...args, "--kind", "Refund", "--dir", dir])),
      /resources\/refund\.ts exists/,
    );
    await Deno.remove(`${dir}/resources/refund.ts`);
  });
  await t.step("the project still type-checks, lints and passes its test", async () => {
    ok(await deno(["task", "check"], { cwd: dir }), "deno task check");
    const run = ok(await deno(["test", "-A"], { cwd: dir }), "deno test -A");
    assert.match(run.stdout, /1 passed \| 0 failed/);
  });
  await t.step("create resource refuses an entry point without the markers", async () => {
    const text = await Deno.readTextFile(`${dir}/operator.ts`);
    await Deno.writeTextFile(`${dir}/operator.ts`, text.replace(/^.*kubeno:controllers.*$/m, ""));
    const line = usageError(
      await kubeno([
        ...["create", "resource", "--group", "shop.example.com", "--version", "v1"],
        ...["--kind", "Invoice", "--dir", dir],
      ]),
    );
    assert.match(line, /operator\.ts lacks the markers .*kubeno:controllers/);
    await assert.rejects(Deno.stat(`${dir}/resources/invoice.ts`), Deno.errors.NotFound);
  });
});

const canCompile = await denortAvailable();
/** Whether denort can be downloaded, which is what a compile without DENORT_BIN needs. */
const denortOnline = await denortDownloadable();

Deno.test("compile: --dry-run shows operatorPermissions(); without denort one line says why", async () => {
  const env = { HOME: Deno.env.get("HOME") ?? "/root", KUBECONFIG: "/etc/kube/a.yaml" };
  const dry = ok(
    await kubeno(["compile", FIXTURE, "-o", "/tmp/op", "--dry-run"], { env }),
    "compile --dry-run",
  );
  const perms = operatorPermissions({ kubeconfigPaths: [`${env.HOME}/.kube`, env.KUBECONFIG] });
  assert.equal(
    dry.stdout.trim(),
    ["deno compile", ...perms, "--output /tmp/op", FIXTURE].join(" "),
  );
  const withRun = ok(
    await kubeno(["compile", FIXTURE, "-o", "/tmp/op", "--dry-run", "--allow-run=aws,kubelogin"], {
      env,
    }),
    "compile --dry-run --allow-run",
  );
  assert.ok(withRun.stdout.includes(" --allow-run=aws,kubelogin "), withRun.stdout);
  assert.ok(!dry.stdout.includes("--allow-run"), "no command may run unless asked for");
  assert.match(usageError(await kubeno(["compile", "missing.ts"])), /"missing.ts" is not a file/);

  await using tmp = await tempDir();
  const noDenort = Object.fromEntries(
    Object.entries(Deno.env.toObject()).filter(([k]) => k !== "DENORT_BIN"),
  );
  const out = `${tmp}/bin/widget-operator`;
  const run = await deno(["run", "-A", "--quiet", CLI, "compile", FIXTURE, "-o", out], {
    env: noDenort,
    clearEnv: true,
  });
  // Without DENORT_BIN it compiles only when denort can be downloaded; a DENORT_BIN that is
  // the only way to compile here is used below, not taken away.
  if (denortOnline) {
    ok(run, "compile");
    assert.match(run.stdout, /^Compiled .* to .*widget-operator \(\d+\.\d MiB\) with --allow-net/);
  } else {
    assert.equal(run.code, 1, run.stderr);
    assert.deepEqual(run.stderr.trimEnd().split("\n"), [
      `kubeno: deno compile could not download its runtime (denort) from ` +
      `https://dl.deno.land/release/v${Deno.version.deno}/denort-${Deno.build.target}.zip; ` +
      `set DENORT_BIN to a denort binary of Deno ${Deno.version.deno} and retry`,
    ]);
  }
  if (Deno.env.get("DENORT_BIN")) {
    const withBin = await deno(["run", "-A", "--quiet", CLI, "compile", FIXTURE, "-o", out], {
      env: { ...noDenort, DENORT_BIN: Deno.env.get("DENORT_BIN")! },
      clearEnv: true,
    });
    ok(withBin, "compile with DENORT_BIN");
    assert.match(withBin.stdout, /^Compiled .* to .*widget-operator \(\d+\.\d MiB\)/);
  }
});

Deno.test({
  name: canCompile
    ? "compile: the binary installs and reconciles with only its compiled permissions"
    : "compile: the binary installs and reconciles with only its compiled permissions " +
      COMPILE_SKIP_REASON,
  ignore: !canCompile,
  async fn() {
    await using tmp = await tempDir();
    await using cp = await startControlPlane();
    const out = `${tmp}/widget-operator`;
    ok(
      await kubeno(["compile", FIXTURE, "-o", out, "--allow-read", cp.kubeconfigPath]),
      "compile",
    );
    await installAndReconcile(cp, [out]);
  },
});

/**
 * Runs `<install> install`, then `<run(ports)> run --leader-elect` until a Widget is
 * reconciled; `run` gets the metrics and probe ports so that it can permit exactly them.
 */
async function installAndReconcile(
  cp: ControlPlane,
  installCmd: string[],
  runCmd: (listen: string[]) => string[] = () => installCmd,
): Promise<void> {
  const env = { NO_COLOR: "1", KUBECONFIG: cp.kubeconfigPath };
  const spawn = (c: string[], args: string[]) =>
    new Deno.Command(c[0], {
      args: [...c.slice(1), ...args],
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    });
  const install = await spawn(installCmd, ["install"]).output();
  assert.equal(install.code, 0, dec.decode(install.stderr));
  const [metrics, probes] = [freePort(), freePort()];
  const listen = [`127.0.0.1:${metrics}`, `127.0.0.1:${probes}`];
  const child = spawn(runCmd(listen), [
    "run",
    ...["--leader-elect", "--namespace", "default"],
    `--metrics-bind-address=127.0.0.1:${metrics}`,
    `--health-probe-bind-address=127.0.0.1:${probes}`,
  ]).spawn();
  const output = child.output();
  try {
    const created = await cp.request(
      "POST",
      "/apis/widgets.kubeno.dev/v1/namespaces/default/widgets",
      {
        apiVersion: "widgets.kubeno.dev/v1",
        kind: "Widget",
        metadata: { name: "w1" },
        spec: { size: 3 },
      },
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await waitFor(async () => {
      const w = await cp.request(
        "GET",
        "/apis/widgets.kubeno.dev/v1/namespaces/default/widgets/w1",
      );
      return w.body?.status?.phase === "Ready";
    }, { timeoutMs: 30_000, what: "the Widget to be reconciled" });
    const lease = await cp.request(
      "GET",
      "/apis/coordination.k8s.io/v1/namespaces/default/leases/widget-operator",
    );
    // --allow-sys=hostname: the identity names the host, as client-go's does.
    assert.match(lease.body?.spec?.holderIdentity ?? "", new RegExp(`^${Deno.hostname()}_`));
  } finally {
    child.kill("SIGTERM");
    const o = await output;
    const stderr = dec.decode(o.stderr);
    assert.equal(o.code, 0, stderr);
    assert.doesNotMatch(stderr, /NotCapable|Requires .* access/, stderr);
  }
}

Deno.test("the fixture operator installs, elects a leader and reconciles under exactly the compile permissions", async () => {
  await using cp = await startControlPlane();
  const port = new URL(cp.server).port;
  // install with the default list; run with the network restricted to the API server and
  // the two listen addresses used here, so the narrower form is verified too.
  const install = operatorPermissions({ kubeconfigPaths: [cp.kubeconfigPath] });
  assert.ok(!install.some((f) => f === "-A" || f === "--allow-all"));
  const base = [Deno.execPath(), "run", "--no-prompt", "--config", CONFIG];
  await installAndReconcile(cp, [...base, ...install, FIXTURE], (listen) => [
    ...base,
    ...operatorPermissions({
      kubeconfigPaths: [cp.kubeconfigPath],
      netHosts: [`127.0.0.1:${port}`],
      listen,
    }),
    FIXTURE,
  ]);
  // The narrow form really is narrow: another port of the same host is refused.
  const elsewhere = operatorPermissions({
    kubeconfigPaths: [cp.kubeconfigPath],
    netHosts: [`127.0.0.1:${freePort()}`],
  });
  const refused = await deno([...base.slice(1), ...elsewhere, FIXTURE, "install"], {
    env: { KUBECONFIG: cp.kubeconfigPath },
  });
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, /Requires net access to "127\.0\.0\.1:\d+"/);
});

Deno.test("the webhook server runs under the compile permissions, and needs the temp dir", async () => {
  await using tmp = await tempDir();
  const script = `${tmp}/webhook.ts`;
  const src = (p: string) => new URL(`src/${p}`, REPO).href;
  await Deno.writeTextFile(
    script,
    `import { admission } from "${src("webhook/admission.ts")}";
import { ConfigMap } from "${src("core/kinds.ts")}";
import { createCa, issueCert } from "${src("util/x509.ts")}";
import { startWebhookServer } from "${src("webhook/server.ts")}";
const ca = await createCa("ca");
const cert = await issueCert({ commonName: "w", ipAddresses: ["127.0.0.1"], server: true }, ca);
await using server = await startWebhookServer({
  webhooks: [admission(ConfigMap, { validate: () => "no" })],
  certificate: cert, hostname: "127.0.0.1", port: 0,
});
using client = Deno.createHttpClient({ caCerts: [ca.certPem] });
const res = await fetch(\`https://127.0.0.1:\${server.port}/validate--v1-configmap\`, { method: "POST", body: "{}", client });
await res.body?.cancel();
console.log(res.status);
`,
  );
  const tmpDir = Deno.env.get("TMPDIR") ?? "/tmp";
  const perms = operatorPermissions({ tmpDir });
  const run = (flags: string[]) =>
    deno(["run", "--no-prompt", "--config", CONFIG, ...flags, script]);
  assert.equal(ok(await run(perms), "webhook server").stdout, "400\n");
  const noWrite = await run(perms.filter((f) => !f.startsWith("--allow-write")));
  assert.notEqual(noWrite.code, 0);
  assert.match(noWrite.stderr, /NotCapable: Requires write access/);
  assert.ok(localKubeconfigPaths().every((p) => p.startsWith("/")));
});
