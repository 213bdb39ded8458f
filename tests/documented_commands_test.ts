// The commands the README documents, run exactly as written there:
//
// - `deno task dev` until the sample is Running, then Ctrl-C: it exits and leaves no process
//   behind;
// - a generated project's `deno task dev` (after `kubeno init ... --kubeno <this checkout>`,
//   as the README says for building against a checkout), the same way;
// - `deno run -A examples/myapp.ts manifests --image IMG | kubectl apply -f -` for the Myapp
//   operator (webhooks included) against a fresh control plane, alone and after `install`;
// - the compiled form: `deno task compile`, `./myapp-operator install`, `./myapp-operator
//   manifests --image IMG | kubectl apply -f -` (reported as skipped, with the reason, where
//   `deno compile` cannot get its runtime).
//
// The commands use the operator's default ports (8080, 8081, 8443, 9443), as written: each test
// that runs one first checks they are free and fails at once naming the process holding one
// (tests/_ports.ts), instead of "address already in use" minutes later. Run this file under
// `flock /tmp/kubeno-ports.lock`.
//
// Ctrl-C is SIGINT to the command's whole process group, which is what a terminal sends; the
// command runs under `setsid` so that it has a group of its own, as a shell's job control
// gives it.
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { startControlPlane } from "../testing.ts";
import { COMPILE_SKIP_REASON, decodeOutput, denortAvailable, waitFor } from "./_helpers.ts";
import { alive, type Proc, Session } from "./_session.ts";
import { assertDefaultPortsFree } from "./_ports.ts";

const REPO = new URL("../", import.meta.url).pathname.replace(/\/$/, "");
const DENO = Deno.execPath();

/** Names that must be among the processes seen, so that "none left" is not vacuous. */
const CONTROL_PLANE = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "kwok",
];

function describe(procs: Proc[]): string {
  return procs.map((p) => `  ${p.pid} ${p.cmdline.slice(0, 160)}`).join("\n");
}

/**
 * Ctrl-C, then: the command exits 0, every process it started ends, and the control plane's
 * temp folder is removed. Processes still running at the moment it exited are printed.
 */
async function ctrlCLeavesNothing(session: Session, mustHaveSeen: RegExp[], tmpDir: string) {
  session.sample();
  const seen = [...session.seen.values()];
  for (const re of mustHaveSeen) {
    assert.ok(
      seen.some((p) => re.test(p.cmdline)),
      `no process matching ${re} was seen:\n${describe(seen)}`,
    );
  }
  session.ctrlC();
  const status = await session.exited();
  const atExit = seen.filter(alive);
  if (atExit.length) {
    console.log(`still ending when the command exited:\n${describe(atExit)}`);
  }
  assert.equal(
    status.code,
    0,
    `exit code ${status.code} after Ctrl-C; output:\n${session.output.slice(-3000)}`,
  );
  // A guard shell may take a moment to notice its binary is gone; nothing may stay.
  await waitFor(() => seen.every((p) => !alive(p)), {
    what: "every process the command started to end",
  }).catch((err) => {
    throw new assert.AssertionError({
      message: `${err.message}\nstill running:\n${describe(seen.filter(alive))}`,
    });
  });
  await waitFor(() => Deno.stat(tmpDir).then(() => false, () => true), {
    what: `the control plane's folder ${tmpDir} to be removed`,
  });
  console.log(`${seen.length} processes seen, none left; ${tmpDir} removed`);
}

Deno.test("a default port already taken fails at once, naming the process that holds it", async () => {
  // Something else listening on 8081 (the health probes' default), as another local operator.
  const holder = new Deno.Command(DENO, {
    args: [
      "eval",
      'Deno.listen({ hostname: "127.0.0.1", port: 8081 }); console.log("listening"); ' +
      "setInterval(() => {}, 1000)",
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = holder.stdout.pipeThrough(new TextDecoderStream()).getReader();
    assert.equal((await reader.read()).value?.trim(), "listening");
    reader.releaseLock();
    const err = await assertDefaultPortsFree().then(() => undefined, (e: Error) => e);
    assert.ok(err, "the check passed with port 8081 taken");
    assert.match(
      err.message,
      new RegExp(
        `^The operator's default ports must be free for this test, which runs the documented ` +
          `commands as written: port 8081 is held by pid ${holder.pid} \\(.*deno eval .*\\)\\. ` +
          `Stop that process and run the test again$`,
      ),
    );
    console.log(err.message);
  } finally {
    holder.kill("SIGKILL");
    await holder.status;
    await holder.stdout.cancel().catch(() => {});
  }
  await assertDefaultPortsFree(); // free again
});

Deno.test("README: `deno task dev` follows the sample to Running; Ctrl-C leaves nothing behind", async () => {
  await assertDefaultPortsFree();
  await using dev = new Session(DENO, ["task", "dev"], { cwd: REPO });
  const kubeconfig = await dev.waitForOutput(/export KUBECONFIG=(\S+)/, 300_000);
  await dev.waitForOutput(/dev: default\/myapp-sample: phase Running, ready 2\/2/, 300_000);
  await dev.waitForOutput(/press Ctrl-C to stop/, 60_000);
  await ctrlCLeavesNothing(
    dev,
    [...CONTROL_PLANE.map((n) => new RegExp(`/${n} `)), /examples\/myapp\.ts run/],
    dirname(kubeconfig[1]),
  );
  assert.match(dev.output, /dev: stopped/);
});

Deno.test("README: `deno task testenv:up` serves a control plane kubectl can use; Ctrl-C leaves nothing behind", async () => {
  await using up = new Session(DENO, ["task", "testenv:up"], { cwd: REPO });
  const kubeconfig = await up.waitForOutput(/export KUBECONFIG=(\S+)/, 300_000);
  const kubectl = await up.waitForOutput(/kubectl: +(\S+)/, 60_000);
  await up.waitForOutput(/Press Ctrl-C to stop\./, 60_000);
  const ready = await new Deno.Command(kubectl[1], {
    args: ["get", "--raw", "/readyz"],
    env: { KUBECONFIG: kubeconfig[1] },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(
    new TextDecoder().decode(ready.stdout),
    "ok",
    new TextDecoder().decode(ready.stderr),
  );
  await ctrlCLeavesNothing(
    up,
    [/\/etcd /, /\/kube-apiserver /],
    dirname(kubeconfig[1]),
  );
});

Deno.test("README: a generated project's `deno task dev` runs its operator; Ctrl-C leaves nothing behind", async () => {
  await assertDefaultPortsFree();
  const tmp = await Deno.makeTempDir({ prefix: "kubeno-init-dev-" });
  try {
    // README: deno run -A jsr:@kubeno/kubeno/cli init myapp-operator \
    //   --group apps.example.com --version v1alpha1 --kind Myapp   (+ --kubeno /path/to/kubeno)
    const init = await new Deno.Command(DENO, {
      args: [
        ...["run", "-A", `${REPO}/cli.ts`, "init", "myapp-operator"],
        ...["--group", "apps.example.com", "--version", "v1alpha1", "--kind", "Myapp"],
        ...["--kubeno", REPO],
      ],
      cwd: tmp,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    assert.equal(init.code, 0, dec.decode(init.stderr));

    // cd myapp-operator; deno task dev
    await using dev = new Session(DENO, ["task", "dev"], { cwd: `${tmp}/myapp-operator` });
    const kubeconfig = (await dev.waitForOutput(/export KUBECONFIG=(\S+)/, 300_000))[1];
    // The hint it prints: `<kubectl> get myapps,deployments`.
    const kubectl =
      (await dev.waitForOutput(/^\s*(\S+\/kubectl) get myapps,deployments$/m, 60_000))[1];
    const phase = async () => {
      const out = await new Deno.Command(kubectl, {
        args: ["get", "myapp", "myapp-sample", "-o", "jsonpath={.status.phase}"],
        env: { KUBECONFIG: kubeconfig },
        stdout: "piped",
        stderr: "null",
      }).output();
      return dec.decode(out.stdout);
    };
    await waitFor(async () => (dev.sample(), await phase()) === "Running", {
      get what() {
        return `the sample Myapp to be Running; output:\n${dev.output.slice(-3000)}`;
      },
      timeoutMs: 300_000,
      intervalMs: 500,
    });
    await ctrlCLeavesNothing(
      dev,
      CONTROL_PLANE.map((n) => new RegExp(`/${n} `)),
      dirname(kubeconfig),
    );
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
});

const IMG = "registry.example.com/myapp-operator:test";
const MANIFESTS_APPLY =
  `deno run -A examples/myapp.ts manifests --image ${IMG} | kubectl apply -f -`;

/** Runs a README shell line in the repo with `deno` and the control plane's `kubectl` on PATH. */
async function sh(line: string, kubeconfig: string, kubectl: string) {
  const path = [dirname(kubectl), dirname(DENO), Deno.env.get("PATH")].join(":");
  const out = await new Deno.Command("sh", {
    args: ["-c", line],
    cwd: REPO,
    env: { PATH: path, KUBECONFIG: kubeconfig },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return decodeOutput(out);
}

/** Every object the manifests list exists, the Deployment runs IMG, the CRD is Established. */
async function assertDeployed(kubeconfig: string, kubectl: string) {
  const get = await sh(
    `deno run -A examples/myapp.ts manifests --image ${IMG} | kubectl get -f - -o name`,
    kubeconfig,
    kubectl,
  );
  assert.equal(get.code, 0, get.stderr);
  const names = get.stdout.trim().split("\n").sort();
  for (
    const want of [
      "customresourcedefinition.apiextensions.k8s.io/myapps.apps.kubeno.dev",
      "deployment.apps/myapp-operator",
      "mutatingwebhookconfiguration.admissionregistration.k8s.io/myapp-operator",
      "namespace/myapp-operator-system",
      "service/myapp-operator-webhook",
      "validatingwebhookconfiguration.admissionregistration.k8s.io/myapp-operator",
    ]
  ) assert.ok(names.includes(want), `${want} not among:\n${names.join("\n")}`);
  const image = await sh(
    "kubectl get deployment myapp-operator -n myapp-operator-system -o jsonpath='{.spec.template.spec.containers[0].image}'",
    kubeconfig,
    kubectl,
  );
  assert.equal(image.stdout, IMG, image.stderr);
  const established = await sh(
    "kubectl wait --for=condition=Established crd/myapps.apps.kubeno.dev --timeout=60s",
    kubeconfig,
    kubectl,
  );
  assert.equal(established.code, 0, established.stderr);
  for (const kind of ["validatingwebhookconfiguration", "mutatingwebhookconfiguration"]) {
    const svc = await sh(
      `kubectl get ${kind} myapp-operator -o jsonpath='{.webhooks[*].clientConfig.service.namespace}/{.webhooks[*].clientConfig.service.name}'`,
      kubeconfig,
      kubectl,
    );
    assert.equal(svc.stdout, "myapp-operator-system/myapp-operator-webhook", svc.stderr);
  }
}

Deno.test("README: `manifests --image IMG | kubectl apply -f -` deploys the Myapp operator, webhooks included, on a fresh cluster", async () => {
  await using cp = await startControlPlane();
  const kubectl = cp.binary("kubectl");
  const apply = await sh(MANIFESTS_APPLY, cp.kubeconfigPath, kubectl);
  assert.equal(apply.code, 0, `${apply.stdout}\n${apply.stderr}`);
  assert.doesNotMatch(apply.stderr, /error|Error/, apply.stderr);
  assert.match(
    apply.stdout,
    /validatingwebhookconfiguration\.admissionregistration\.k8s\.io\/myapp-operator created/,
  );
  await assertDeployed(cp.kubeconfigPath, kubectl);
});

Deno.test("README: `install`, the namespace and a server dry run, then `manifests --image IMG | kubectl apply -f -`, as 'Installing into a cluster' shows", async () => {
  await using cp = await startControlPlane();
  const kubectl = cp.binary("kubectl");
  const install = await sh("deno run -A examples/myapp.ts install", cp.kubeconfigPath, kubectl);
  assert.equal(install.code, 0, `${install.stdout}\n${install.stderr}`);
  // README: a server dry run first needs the namespace; without it, what the README says.
  const dryRun =
    `deno run -A examples/myapp.ts manifests --image ${IMG} | kubectl apply --dry-run=server -f -`;
  const refused = await sh(dryRun, cp.kubeconfigPath, kubectl);
  assert.equal(refused.code, 1, refused.stdout);
  // (kubectl's own warnings about objects `install` created are not errors.)
  const errors = refused.stderr.trim().split("\n").filter((l) => !l.startsWith("Warning: "));
  assert.ok(errors.length > 0);
  for (const line of errors) {
    assert.equal(
      line,
      'Error from server (NotFound): error when creating "STDIN": namespaces "myapp-operator-system" not found',
    );
  }
  const ns = await sh("kubectl create namespace myapp-operator-system", cp.kubeconfigPath, kubectl);
  assert.equal(ns.code, 0, ns.stderr);
  const checked = await sh(dryRun, cp.kubeconfigPath, kubectl);
  assert.equal(checked.code, 0, `${checked.stdout}\n${checked.stderr}`);
  const lines = checked.stdout.trim().split("\n");
  assert.ok(lines.length >= 10, checked.stdout);
  for (const line of lines) assert.match(line, / \(server dry run\)$/);
  console.log(`dry run after creating the namespace: ${lines.length} objects accepted`);
  const apply = await sh(MANIFESTS_APPLY, cp.kubeconfigPath, kubectl);
  assert.equal(apply.code, 0, `${apply.stdout}\n${apply.stderr}`);
  assert.doesNotMatch(apply.stderr, /error|Error/, apply.stderr);
  await assertDeployed(cp.kubeconfigPath, kubectl);
});

const canCompile = await denortAvailable();

Deno.test({
  name: "README: `deno task compile`, `./myapp-operator install`, then " +
    "`./myapp-operator manifests --image IMG | kubectl apply -f -`" +
    (canCompile ? "" : ` ${COMPILE_SKIP_REASON}`),
  ignore: !canCompile,
  async fn() {
    await using cp = await startControlPlane();
    const kubectl = cp.binary("kubectl");
    try {
      for (
        const line of [
          "deno task compile",
          "./myapp-operator install",
          `./myapp-operator manifests --image ${IMG} | kubectl apply -f -`,
        ]
      ) {
        const r = await sh(line, cp.kubeconfigPath, kubectl);
        assert.equal(r.code, 0, `${line}:\n${r.stdout}\n${r.stderr}`);
      }
      await assertDeployed(cp.kubeconfigPath, kubectl);
    } finally {
      await Deno.remove(`${REPO}/myapp-operator`).catch(() => {});
    }
  },
});
