// Day-one flows, run exactly as a user types them against a fresh control plane with
// workloads: `install`; `run` with only `--kubeconfig` (no namespace exists for the operator);
// `kubectl apply` of the sample until it is Running; the webhook refusing 101 replicas;
// Ctrl-C; then deploying for real with `manifests | kubectl apply -f -`. Then the hand-off
// the other way: a local run after the in-cluster deploy, a local run killed with SIGKILL
// (repaired by `install`), and a local run with nothing registered before it — these three
// in the example header's form, `deno run -A examples/myapp.ts` with no command or flag.
//
// The commands are the README's and the example header's, typed in the checkout: the
// control plane is "the current cluster" through KUBECONFIG, as it is for a kubectl user,
// and `run` gets only `--kubeconfig`. One control plane for the file; the operator runs with
// its default ports (8080, 8081, 9443), because the user's command passes no other flag.
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { startControlPlane } from "../testing.ts";
import { decodeOutput, waitFor } from "./_helpers.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const NAME = "myapp-operator";
const SAVED = "kubeno.dev/saved-by-local-run";

/**
 * The user's shell: in the checkout, with `deno` and the control plane's `kubectl` on PATH,
 * KUBECONFIG naming the cluster as kubectl users have it (the current cluster), and nothing
 * that would tell the program it is in a cluster.
 */
const user = { kubeconfig: "", binDir: "" };
function userEnv(): Record<string, string> {
  const env = Deno.env.toObject();
  for (const k of ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "POD_NAMESPACE"]) {
    delete env[k];
  }
  delete env.WATCH_NAMESPACE;
  const path = [user.binDir, dirname(Deno.execPath()), env.PATH].filter(Boolean).join(":");
  return { ...env, KUBECONFIG: user.kubeconfig, PATH: path, NO_COLOR: "1" };
}

interface Output {
  code: number;
  stdout: string;
  stderr: string;
}

async function sh(script: string): Promise<Output> {
  const out = await new Deno.Command("bash", {
    args: ["-o", "pipefail", "-c", script],
    cwd: ROOT,
    env: userEnv(),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return decodeOutput(out);
}

/** A `run` in the background with its stderr collected. */
class LocalRun {
  readonly #proc: Deno.ChildProcess;
  readonly #pump: Promise<void>;
  log = "";

  constructor(args: string[]) {
    this.#proc = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "examples/myapp.ts", ...args],
      cwd: ROOT,
      env: userEnv(),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const collect = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) this.log += chunk;
    };
    this.#pump = Promise.all([collect(this.#proc.stdout), collect(this.#proc.stderr)]).then(
      () => {},
    );
  }

  /** Sends a signal and waits for the exit code. */
  async stop(signal: Deno.Signal): Promise<number> {
    this.#proc.kill(signal);
    const { code } = await this.#proc.status;
    await this.#pump;
    return code;
  }

  /** Kills it if still running (for `finally`). */
  async dispose(): Promise<void> {
    try {
      this.#proc.kill("SIGKILL");
    } catch { /* exited */ }
    await this.#proc.status;
    await this.#pump;
  }
}

Deno.test("day one: install, run with only --kubeconfig, sample Running, 101 refused, Ctrl-C, manifests | kubectl apply", async (t) => {
  await using cp = await startControlPlane({ workloads: true });
  const kcfg = cp.kubeconfigPath;
  user.kubeconfig = kcfg;
  user.binDir = dirname(cp.binary("kubectl"));
  const k = (args: string) => sh(`kubectl ${args}`);
  const configuration = async (kind: "validating" | "mutating") => {
    const r = await k(`get ${kind}webhookconfiguration ${NAME} -o json`);
    return r.code === 0 ? JSON.parse(r.stdout) : undefined;
  };
  const sampleIs = async (phase: string) => {
    const r = await k("get myapp myapp-sample -n default -o jsonpath={.status.phase}");
    return r.code === 0 && r.stdout === phase;
  };

  await t.step("install", async () => {
    const r = await sh("deno run -A examples/myapp.ts install");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /validatingwebhookconfiguration\.admissionregistration\.k8s\.io/);
  });

  const run = new LocalRun(["run", "--kubeconfig", kcfg]);
  try {
    await t.step(
      "run with only --kubeconfig serves, and says what it did in one line",
      async () => {
        // The whole line: a pipe read can end inside it.
        await waitFor(() => /Running outside a cluster[^\n]*\n/.test(run.log), {
          timeoutMs: 60_000,
          what: `the local run to start; log so far:\n${run.log}`,
        });
        const logged = run.log.split("\n").find((l) => l.includes("Running outside a cluster"))!;
        // Logs are JSON lines when stderr is not a terminal; the message is the one line.
        const line = logged.startsWith("{") ? JSON.parse(logged).msg : logged;
        assert.match(line, /webhooks served at https:\/\/127\.0\.0\.1:9443 with an in-memory/);
        assert.match(line, /namespace "default"/);
        assert.doesNotMatch(run.log, /myapp-operator-system/);
      },
    );

    await t.step("kubectl apply of the sample is admitted and becomes Running", async () => {
      await waitFor(async () => {
        const r = await sh("kubectl apply -f examples/myapp-sample.yaml");
        if (r.code !== 0) throw new Error(r.stderr.trim());
        return true;
      }, { timeoutMs: 60_000, intervalMs: 250, what: "kubectl apply of the sample" });
      await waitFor(() => sampleIs("Running"), {
        timeoutMs: 120_000,
        intervalMs: 250,
        what: "the sample to be Running",
      });
    });

    await t.step("the webhook refuses replicas: 101", async () => {
      const r = await k(
        `patch myapp myapp-sample -n default --type=merge -p '{"spec":{"replicas":101}}'`,
      );
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /denied the request: spec\.replicas: must be at most 100, got 101/);
    });

    await t.step("Ctrl-C stops it with 0 and hands the registration back", async () => {
      assert.equal(await run.stop("SIGINT"), 0, run.log);
      for (const kind of ["validating", "mutating"] as const) {
        const cfg = await configuration(kind);
        assert.ok(cfg, `${kind} configuration kept`);
        assert.equal(cfg.metadata.annotations?.[SAVED], undefined);
        for (const w of cfg.webhooks) {
          assert.equal(w.clientConfig.url, undefined);
          assert.equal(w.clientConfig.service?.name, `${NAME}-webhook`);
        }
      }
    });
  } finally {
    await run.dispose();
  }

  await t.step("manifests | kubectl apply -f - deploys it", async () => {
    const r = await sh(
      "deno run -A examples/myapp.ts manifests | kubectl apply -f -",
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /deployment\.apps\/myapp-operator created/);
    assert.match(r.stdout, /validatingwebhookconfiguration\.admissionregistration\.k8s\.io\//);
  });

  await t.step("a local run after the in-cluster deploy takes over and hands back", async () => {
    const before = await configuration("validating");
    // The example header's form: no command, no flag, the current kubeconfig.
    const again = new LocalRun([]);
    try {
      await waitFor(async () => {
        const cfg = await configuration("validating");
        return cfg?.webhooks?.[0]?.clientConfig?.url?.startsWith("https://127.0.0.1:9443/");
      }, { timeoutMs: 60_000, what: `the local run to take over; log:\n${again.log}` });
      const r = await k(
        `patch myapp myapp-sample -n default --type=merge -p '{"spec":{"replicas":101}}'`,
      );
      assert.match(r.stderr, /denied the request: spec\.replicas: must be at most 100/);
      const ok = await k(
        `patch myapp myapp-sample -n default --type=merge -p '{"spec":{"replicas":3}}'`,
      );
      assert.equal(ok.code, 0, ok.stderr);
      await waitFor(async () => {
        const g = await k("get myapp myapp-sample -n default -o jsonpath={.status.readyReplicas}");
        return g.stdout === "3";
      }, { timeoutMs: 120_000, intervalMs: 250, what: "3 ready replicas" });
      assert.equal(await again.stop("SIGINT"), 0, again.log);
    } finally {
      await again.dispose();
    }
    const after = await configuration("validating");
    assert.deepEqual(after.webhooks, before.webhooks, "the deployed entries are back as they were");
    assert.deepEqual(after.metadata.annotations, before.metadata.annotations);
    const r = await sh(
      "deno run -A examples/myapp.ts manifests | kubectl apply -f -",
    );
    assert.equal(r.code, 0, r.stderr);
  });

  await t.step("a local run killed with SIGKILL is repaired by install", async () => {
    const killed = new LocalRun([]);
    try {
      await waitFor(async () => (await configuration("mutating"))?.metadata.annotations?.[SAVED], {
        timeoutMs: 60_000,
        what: `the local run to take over; log:\n${killed.log}`,
      });
      await killed.stop("SIGKILL");
    } finally {
      await killed.dispose();
    }
    const left = await configuration("mutating");
    assert.ok(left.webhooks[0].clientConfig.url, "the killed run left its URL registration");
    const install = await sh("deno run -A examples/myapp.ts install");
    assert.equal(install.code, 0, install.stderr);
    assert.match(
      install.stdout,
      /mutatingwebhookconfiguration\.admissionregistration\.k8s\.io\/myapp-operator restored/,
    );
    for (const kind of ["validating", "mutating"] as const) {
      const cfg = await configuration(kind);
      assert.equal(cfg.metadata.annotations?.[SAVED], undefined);
      assert.equal(cfg.webhooks[0].clientConfig.url, undefined);
      assert.equal(cfg.webhooks[0].clientConfig.service.name, `${NAME}-webhook`);
    }
    const r = await sh(
      "deno run -A examples/myapp.ts manifests | kubectl apply -f -",
    );
    assert.equal(r.code, 0, r.stderr);
  });

  await t.step(
    "with nothing registered before, a local run deletes what it registered",
    async () => {
      for (const kind of ["validating", "mutating"]) {
        const d = await k(`delete ${kind}webhookconfiguration ${NAME}`);
        assert.equal(d.code, 0, d.stderr);
      }
      const fresh = new LocalRun([]);
      try {
        await waitFor(() => configuration("validating"), {
          timeoutMs: 60_000,
          what: `the local run to register; log:\n${fresh.log}`,
        });
        assert.equal(await fresh.stop("SIGINT"), 0, fresh.log);
      } finally {
        await fresh.dispose();
      }
      assert.equal(await configuration("validating"), undefined);
      assert.equal(await configuration("mutating"), undefined);
    },
  );
});
