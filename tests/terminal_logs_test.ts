// What a person sees in a terminal: `install`, `uninstall`, `manifests` and `run` print human
// log lines there (time, level, logger, message, and only the fields the message does not
// show), and JSON records only where a machine reads them: when stderr is not a terminal, or
// in a cluster (KUBERNETES_SERVICE_HOST set). The terminal is a real pseudo-terminal, from
// util-linux's `script`. The API server is unreachable (port 1), so `install` and `run` log
// their wait and give up after 1 s; no control plane is needed.
import assert from "node:assert/strict";

const ROOT = new URL("..", import.meta.url).pathname;
const dec = new TextDecoder();

async function kubeconfig(): Promise<string> {
  const path = await Deno.makeTempFile({ prefix: "kubeno-unreachable-", suffix: ".yaml" });
  await Deno.writeTextFile(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters: [{ name: c, cluster: { server: 'https://127.0.0.1:1' } }]",
      "users: [{ name: u, user: { token: x } }]",
      "contexts: [{ name: c, context: { cluster: c, user: u } }]",
      "current-context: c",
    ].join("\n"),
  );
  return path;
}

const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/** The example's command in a pseudo-terminal (stdout and stderr both on it). */
async function inTerminal(args: string[], env: Record<string, string> = {}) {
  const line = ["deno", "run", "-A", "--quiet", "examples/myapp.ts", ...args].map(quote).join(" ");
  const out = await new Deno.Command("script", {
    args: ["-qec", line, "/dev/null"],
    cwd: ROOT,
    env: {
      PATH: `${Deno.execPath().replace(/\/[^/]+$/, "")}:${Deno.env.get("PATH")}`,
      NO_COLOR: "1",
      KUBECONFIG: "/nonexistent",
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, text: dec.decode(out.stdout).replaceAll("\r\n", "\n") };
}

const WAIT = "Waiting for the Kubernetes API server (unreachable)";
const PRETTY =
  /^\d{4}-\d\d-\d\dT[\d:.]+Z WARN {2}kubeno\.operator\.startup Waiting for the Kubernetes API server \(unreachable\): .*; retrying with back-off for up to [\d.]+m?s more( {2}\S.*)?$/m;

Deno.test("install, uninstall, manifests and run print human log lines in a terminal, JSON elsewhere", async (t) => {
  const kc = await kubeconfig();
  try {
    await t.step("install in a terminal: a human WARN line, then the one error line", async () => {
      const r = await inTerminal(["install", "--kubeconfig", kc, "--timeout", "1s"]);
      assert.equal(r.code, 1, r.text);
      assert.match(r.text, PRETTY);
      assert.doesNotMatch(r.text, /^\{/m, `a JSON record in the terminal:\n${r.text}`);
      // The fields the message already shows (state, remaining) are not repeated.
      const warn = r.text.split("\n").find((l) => l.includes(WAIT))!;
      assert.doesNotMatch(warn, / state=| remaining=/, warn);
      assert.match(
        r.text,
        /^myapp-operator: Gave up after waiting [\d.]+s for the Kubernetes API server/m,
      );
    });
    await t.step("run in a terminal: human lines too", async () => {
      const r = await inTerminal([
        ...["run", "--kubeconfig", kc, "--startup-timeout", "1s"],
        ...["--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=0"],
      ]);
      assert.equal(r.code, 1, r.text);
      assert.match(r.text, PRETTY);
      assert.doesNotMatch(r.text, /^\{/m, `a JSON record in the terminal:\n${r.text}`);
    });
    await t.step("uninstall and manifests in a terminal: no JSON record either", async () => {
      const u = await inTerminal(["uninstall", "--kubeconfig", kc]);
      assert.equal(u.code, 1, u.text);
      assert.doesNotMatch(u.text, /^\{/m, u.text);
      assert.match(u.text, /^myapp-operator: Cannot list from Kubernetes API server/m);
      const m = await inTerminal(["manifests", "--image", "example.com/myapp:1"]);
      assert.equal(m.code, 0, m.text);
      assert.doesNotMatch(m.text, /^\{/m, m.text);
      assert.match(m.text, /^kind: Deployment$/m);
    });
    await t.step("in a cluster (KUBERNETES_SERVICE_HOST), even in a terminal: JSON", async () => {
      const r = await inTerminal(["install", "--kubeconfig", kc, "--timeout", "1s"], {
        KUBERNETES_SERVICE_HOST: "10.96.0.1",
      });
      assert.equal(r.code, 1, r.text);
      const record = r.text.split("\n").find((l) => l.startsWith("{"));
      assert.ok(record, r.text);
      assert.equal(JSON.parse(record).logger, "kubeno.operator.startup");
      assert.doesNotMatch(r.text, PRETTY);
    });
    await t.step("stderr not a terminal: JSON", async () => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "--quiet",
          "examples/myapp.ts",
          "install",
          "--kubeconfig",
          kc,
          "--timeout=1s",
        ],
        cwd: ROOT,
        env: { NO_COLOR: "1", KUBECONFIG: "/nonexistent", KUBERNETES_SERVICE_HOST: "" },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = dec.decode(out.stderr);
      assert.equal(out.code, 1, stderr);
      const record = JSON.parse(stderr.split("\n").find((l) => l.startsWith("{"))!);
      assert.equal(record.level, "warn");
      assert.match(record.msg, /^Waiting for the Kubernetes API server \(unreachable\)/);
    });
  } finally {
    await Deno.remove(kc);
  }
});

/** The first "Waiting for the Kubernetes API server" record of a command, then it is killed. */
async function firstWait(args: string[], kc: string): Promise<Record<string, string>> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", "examples/myapp.ts", ...args, "--kubeconfig", kc],
    cwd: ROOT,
    env: { NO_COLOR: "1", KUBECONFIG: "/nonexistent", KUBERNETES_SERVICE_HOST: "" },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  try {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      const line = text.split("\n").find((l) => l.includes(WAIT) && l.endsWith("}"));
      if (line) return JSON.parse(line);
    }
    throw new Error(`no "${WAIT}" record:\n${text}`);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    await child.status;
  }
}

Deno.test("the documented defaults: install waits up to 60s (--timeout), run up to 2m (--startup-timeout)", async () => {
  const kc = await kubeconfig();
  try {
    // The first wait is logged at the first failed attempt, with the time left, rounded.
    const install = await firstWait(["install"], kc);
    assert.equal(install.remaining, "1m", JSON.stringify(install));
    const run = await firstWait(
      ["run", "--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=0"],
      kc,
    );
    assert.equal(run.remaining, "2m", JSON.stringify(run));
  } finally {
    await Deno.remove(kc);
  }
});
