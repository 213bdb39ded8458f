// Ctrl-C that stopped `run` arrives once more after `run` returned (under `deno task` a
// terminal's Ctrl-C reaches the process twice): the echo must not kill the caller's cleanup
// with code 130 — the flake `deno task dev` of a generated project once showed. No API server
// is needed: `run` is stopped while it waits for one.
import assert from "node:assert/strict";
import { waitFor } from "./_helpers.ts";

const FIXTURE = new URL("./fixtures/signal_echo.ts", import.meta.url).pathname;

Deno.test("run: the echo of the Ctrl-C that stopped it does not cut the caller's cleanup short", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kubeno-signal-echo-" });
  try {
    // An API server that refuses connections: `run` waits for it, with back-off.
    const kubeconfig = `${dir}/kubeconfig`;
    await Deno.writeTextFile(
      kubeconfig,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:1" } }],
        users: [{ name: "u", user: { token: "t" } }],
        contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
        "current-context": "x",
      }),
    );
    const proc = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", FIXTURE, kubeconfig],
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let out = "";
    const pump = Promise.all([proc.stdout, proc.stderr].map(async (s) => {
      for await (const chunk of s.pipeThrough(new TextDecoderStream())) out += chunk;
    }));
    await waitFor(() => out.includes("Waiting for the Kubernetes API server"), {
      what: "run to wait for the API server",
    });
    proc.kill("SIGINT");
    const status = await proc.status;
    await pump;
    assert.match(out, /run returned 0/);
    assert.equal(status.code, 0, `exit code ${status.code}; output:\n${out.slice(-2000)}`);
    assert.match(out, /cleanup done/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
