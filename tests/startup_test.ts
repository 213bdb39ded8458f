// Start-up of the real operator program (tests/fixtures/widget_operator.ts) against a real
// control plane (one for the file) that is down, restarting, or refusing: what is waited out
// (unreachable, not ready) and what exits 1 at once with one line (404, 401, 403).
//
// A process that should exit at once runs with --startup-timeout=10m and is stopped with
// SIGTERM after 60 s: had it waited instead, it would exit 0 then and fail the test.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { decodeOutput, waitFor, widgetOperatorCommand } from "./_helpers.ts";
import { freePort } from "../src/testing/process.ts";

const CRD = "widgets.widgets.kubeno.dev";
const NO_ENDPOINTS = ["--metrics-bind-address=0", "--health-probe-bind-address=0"];

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

const command = widgetOperatorCommand;

/** Runs the program to its end; SIGTERM after 60 s. */
async function op(...args: string[]) {
  const out = await command(args, AbortSignal.timeout(60_000)).output();
  return decodeOutput(out);
}

/** A running program whose stderr lines are collected as they come. */
class Running implements AsyncDisposable {
  readonly lines: { raw: string; json?: Json; at: number }[] = [];
  readonly status: Promise<Deno.CommandStatus>;
  exited = false;
  readonly #proc: Deno.ChildProcess;
  readonly #read: Promise<void>;

  constructor(args: string[]) {
    this.#proc = command(args).spawn();
    this.status = this.#proc.status.then((s) => {
      this.exited = true;
      return s;
    });
    const stderr = this.#proc.stderr;
    this.#read = (async () => {
      let rest = "";
      for await (const chunk of stderr.pipeThrough(new TextDecoderStream())) {
        const parts = (rest + chunk).split("\n");
        rest = parts.pop()!;
        for (const raw of parts.filter((p) => p.trim())) {
          let json: Json | undefined;
          try {
            json = JSON.parse(raw);
          } catch { /* the exit line */ }
          this.lines.push({ raw, json, at: Date.now() });
        }
      }
    })();
    this.#proc.stdout.cancel();
  }

  logged(prefix: string) {
    return this.lines.filter((l) =>
      typeof l.json?.msg === "string" && l.json.msg.startsWith(prefix)
    );
  }

  tail(n = 20): string {
    return this.lines.slice(-n).map((l) => `  ${l.raw}`).join("\n");
  }

  kill(signal: Deno.Signal): void {
    try {
      this.#proc.kill(signal);
    } catch { /* exited */ }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.kill("SIGKILL");
    await this.status;
    await this.#read;
  }
}

function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, `expected one line on stderr, got:\n${stderr}`);
  return lines[0];
}

async function probe(port: number, path: string): Promise<number> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/${path}`);
    await res.body?.cancel();
    return res.status;
  } catch {
    return 0;
  }
}

Deno.test("start-up: refusals exit at once, an absent or restarting API server is waited out", async (t) => {
  await using cp = await startControlPlane();
  const kc = ["--kubeconfig", cp.kubeconfigPath];
  const report: string[] = [];
  const measured = (line: string) => {
    report.push(line);
    console.log(line);
  };

  await t.step(
    "404: the kind is not installed: exit 1 at once, one line naming install",
    async () => {
      const res = await op("run", ...kc, "--startup-timeout=10m", ...NO_ENDPOINTS);
      assert.equal(res.code, 1, res.stderr);
      assert.equal(
        oneLine(res.stderr),
        `widget-operator: The Kubernetes API server does not serve Widget (widgets.kubeno.dev/v1): its CustomResourceDefinition "${CRD}" is not installed; run "widget-operator install" first`,
      );
    },
  );

  await t.step("install waits out an API server that is down, then installs", async () => {
    await cp.stopApiServer();
    const install = new Running(["install", ...kc, "--timeout=5m"]);
    await using _ = install;
    await waitFor(() => install.logged("Waiting for the Kubernetes API server (unreachable)")[0], {
      what: "install to wait for the API server",
    });
    assert.equal(install.exited, false, install.tail());
    await cp.startApiServer();
    const status = await install.status;
    assert.equal(status.code, 0, install.tail());
    assert.equal(
      (await cp.request("GET", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD}`))
        .status,
      200,
    );
    measured(
      `install: waited ${
        install.logged("The Kubernetes API server answered after")[0]?.json?.waitedMs
      } ms for the API server, then installed`,
    );
  });

  await t.step(
    "401: refused credentials exit 1 at once, one line naming the kubeconfig",
    async () => {
      const kubeconfig = await Deno.makeTempFile({ suffix: ".kubeconfig" });
      try {
        await Deno.writeTextFile(
          kubeconfig,
          JSON.stringify({
            apiVersion: "v1",
            kind: "Config",
            clusters: [{
              name: "c",
              cluster: { server: cp.server, "certificate-authority-data": btoa(cp.caCertPem) },
            }],
            users: [{ name: "u", user: { token: "not-a-valid-token" } }],
            contexts: [{ name: "ctx", context: { cluster: "c", user: "u" } }],
            "current-context": "ctx",
          }),
        );
        const res = await op(
          "run",
          "--kubeconfig",
          kubeconfig,
          "--startup-timeout=10m",
          ...NO_ENDPOINTS,
        );
        assert.equal(res.code, 1, res.stderr);
        const line = oneLine(res.stderr);
        assert.match(line, /^widget-operator: Cannot list widgets: Unauthorized/);
        assert.ok(line.endsWith("; the kubeconfig's credentials were rejected; renew them"), line);
      } finally {
        await Deno.remove(kubeconfig);
      }
    },
  );

  await t.step("403: a forbidden list exits 1 at once, one line naming the RBAC", async () => {
    const nobody = await cp.createUser("nobody");
    const res = await op("run", "--kubeconfig", nobody, "--startup-timeout=10m", ...NO_ENDPOINTS);
    assert.equal(res.code, 1, res.stderr);
    const line = oneLine(res.stderr);
    assert.match(
      line,
      /^widget-operator: Cannot list widgets: Forbidden: .*User "nobody" cannot list/,
    );
    assert.ok(line.includes('grant the permission (see the "manifests" command\'s RBAC)'), line);
  });

  await t.step(
    "started while the API server is down: alive, not ready, then ready soon after it returns",
    async () => {
      await cp.kubectl("create", "namespace", "up").then((r) => assert.equal(r.code, 0, r.stderr));
      const widget = {
        apiVersion: "widgets.kubeno.dev/v1",
        kind: "Widget",
        metadata: { name: "w1", namespace: "up" },
        spec: { size: 3 },
      };
      const created = await cp.request(
        "POST",
        "/apis/widgets.kubeno.dev/v1/namespaces/up/widgets",
        widget,
      );
      assert.equal(created.status, 201, JSON.stringify(created.body));
      await cp.stopApiServer();

      const port = freePort();
      const operator = new Running([
        "run",
        ...kc,
        "--log-level=debug",
        "--metrics-bind-address=0",
        `--health-probe-bind-address=127.0.0.1:${port}`,
      ]);
      await using _ = operator;
      const retries = () => operator.logged("Still waiting for the Kubernetes API server");
      const waits = () => operator.logged("Waiting for the Kubernetes API server");
      // Several retries while the API server is down, each time alive and not ready.
      for (let seen = 0; seen < 4; seen = retries().length) {
        await waitFor(() => retries().length > seen || operator.exited, {
          what: "another retry",
          timeoutMs: 30_000,
        });
        assert.equal(operator.exited, false, operator.tail());
        assert.equal(await probe(port, "healthz"), 200);
        assert.equal(await probe(port, "readyz"), 500);
      }
      assert.equal(waits().length, 1, `one warning for the whole wait:\n${operator.tail()}`);
      assert.equal(waits()[0].json?.state, "unreachable");
      assert.equal(waits()[0].json?.level, "warn");

      // Bring it back, watching when the API server first answers (503 while it starts), when
      // its own /readyz passes, and when the operator's /readyz passes.
      let answeredAt = 0, apiReadyAt = 0, readyAt = 0;
      const watching = (async () => {
        while (!(readyAt && apiReadyAt) && !operator.exited) {
          if (!apiReadyAt) {
            const status = await cp.request("GET", "/readyz").then((r) => r.status, () => 0);
            if (status && !answeredAt) answeredAt = Date.now();
            if (status === 200) apiReadyAt = Date.now();
          }
          if (!readyAt && (await probe(port, "readyz")) === 200) readyAt = Date.now();
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      await cp.startApiServer();
      await waitFor(() => readyAt, { what: "the operator to become ready", timeoutMs: 60_000 });
      await waitFor(() => apiReadyAt || operator.exited, { what: "the API server's /readyz" });
      await watching;
      assert.equal(operator.exited, false, operator.tail());
      assert.equal(await probe(port, "healthz"), 200);
      const answered = operator.logged("The Kubernetes API server answered after")[0];
      assert.ok(answered, operator.tail());
      // Once per change of state: no two warnings in a row name the same state.
      const states = waits().map((l) => l.json?.state);
      assert.ok(states.every((s, i) => i === 0 || s !== states[i - 1]), `states ${states}`);
      assert.ok(retries().length >= 4);
      await waitFor(async () => {
        const w = await cp.request("GET", "/apis/widgets.kubeno.dev/v1/namespaces/up/widgets/w1");
        return w.body?.status?.phase === "Ready";
      }, { what: "w1 reconciled" });
      measured(
        `down at start: ${retries().length} retries logged at debug, ${states.length} warnings (${
          states.join(" → ")
        }); the operator's /readyz passed ${
          readyAt - answeredAt
        } ms after the API server first answered (${
          readyAt >= apiReadyAt
            ? `${readyAt - apiReadyAt} ms after`
            : `${apiReadyAt - readyAt} ms before`
        } its own /readyz passed; the operator waited ${answered.json?.waitedMs} ms in all)`,
      );
      operator.kill("SIGTERM");
      assert.equal((await operator.status).code, 0, operator.tail());
    },
  );

  await t.step(
    "caches that cannot sync end start-up at the deadline with one line naming why",
    async () => {
      // May list Widgets (the primary kind) but not ConfigMaps (owned): the ConfigMap
      // informer retries until --startup-timeout, then start-up fails.
      await cp.kubectl(
        "create",
        "clusterrole",
        "widgets-only",
        "--verb=*",
        "--resource=widgets.widgets.kubeno.dev,widgets.widgets.kubeno.dev/status,events",
      ).then((r) => assert.equal(r.code, 0, r.stderr));
      await cp.kubectl(
        "create",
        "clusterrolebinding",
        "partial-widgets",
        "--clusterrole=widgets-only",
        "--user=partial",
      ).then((r) => assert.equal(r.code, 0, r.stderr));
      const partial = await cp.createUser("partial");
      const started = Date.now();
      const res = await op("run", "--kubeconfig", partial, "--startup-timeout=4s", ...NO_ENDPOINTS);
      const took = Date.now() - started;
      assert.equal(res.code, 1, res.stderr);
      const plain = res.stderr.trimEnd().split("\n").filter((l) => !l.startsWith("{"));
      const line = oneLine(plain.join("\n"));
      assert.match(
        line,
        /^widget-operator: Caches did not sync within the start-up timeout \(--startup-timeout=4s\): Cannot list configmaps: Forbidden: .*User "partial" cannot list/,
      );
      assert.ok(line.includes('grant the permission (see the "manifests" command\'s RBAC)'), line);
      assert.ok(took >= 4_000, `exited after ${took} ms, before the deadline`);
    },
  );

  if (report.length) console.log(`\nMeasured:\n  ${report.join("\n  ")}`);
});
