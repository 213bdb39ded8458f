import assert from "node:assert/strict";
import { isSecretKey } from "./_log_redact.ts";
import { configureLogging, getLogger, redact, resetLogging } from "./log.ts";

async function capture(options: Parameters<typeof configureLogging>[0] = {}) {
  const lines: string[] = [];
  await configureLogging({ ...options, write: (l) => lines.push(l) });
  return lines;
}

Deno.test("configureLogging() json: one parseable line per record with the reconcile fields", async () => {
  const lines = await capture({ format: "json" });
  const log = getLogger(["kubeno", "controller"]).with({
    controller: "myapp",
    namespace: "default",
    name: "web",
    reconcileID: "6a1f0c2e",
  });
  const before = Date.now();
  log.info("Reconciled {name} in {ms} ms", { ms: 12 });
  const after = Date.now();
  log.debug("Hidden at info level");
  log.warn("Requeue");
  log.error("Failed", { error: new TypeError("Bad spec") });
  assert.equal(lines.length, 3);
  assert.ok(lines.every((l) => l.endsWith("\n") && !l.slice(0, -1).includes("\n")));
  const [first, warn, err] = lines.map((l) => JSON.parse(l));
  assert.equal(first.level, "info");
  assert.equal(first.logger, "kubeno.controller");
  assert.equal(first.msg, "Reconciled web in 12 ms");
  const ts = Date.parse(first.ts);
  assert.ok(before <= ts && ts <= after, `ts ${first.ts} is not the time of the call`);
  assert.deepEqual(
    [first.controller, first.namespace, first.name, first.reconcileID, first.ms],
    ["myapp", "default", "web", "6a1f0c2e", 12],
  );
  assert.equal(warn.level, "warn");
  assert.equal(err.level, "error");
  assert.equal(err.error.name, "TypeError");
  assert.equal(err.error.message, "Bad spec");
  await resetLogging();
});

Deno.test("configureLogging() never writes secrets", async () => {
  const lines = await capture({ level: "debug", format: "json" });
  const log = getLogger(["kubeno", "client"]);
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "db", namespace: "default" },
    data: { password: "aHVudGVyMg==" },
    stringData: { "tls.key": "raw" },
  };
  log.debug("Applied {object}", {
    object: secret,
    token: "eyJhbGciOi.secret.token",
    bearerToken: "abc",
    password: "hunter2",
    headers: { Authorization: "Bearer xyz", "Content-Type": "application/json" },
    user: { "client-key-data": "LS0tLS1CRUdJTi...", "client-certificate-data": "cert-ok" },
    "tls.key": "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----",
    note: "sent Authorization: Bearer abc.def.ghi to the server",
    pem: "key: -----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY----- end",
  });
  const text = lines.join("");
  for (
    const leaked of [
      "aHVudGVyMg",
      "raw",
      "eyJhbGciOi",
      "hunter2",
      "xyz",
      "LS0tLS1",
      "MIIE",
      "abc.def",
      "MHc",
    ]
  ) {
    assert.ok(!text.includes(leaked), `Leaked "${leaked}": ${text}`);
  }
  const line = JSON.parse(lines[0]);
  assert.equal(line.msg.includes("[REDACTED]"), true);
  assert.equal(line.object.data, "[REDACTED]");
  assert.equal(line.object.stringData, "[REDACTED]");
  assert.equal(line.object.metadata.name, "db");
  assert.equal(line.headers["Content-Type"], "application/json");
  assert.equal(line.user["client-certificate-data"], "cert-ok");
  assert.equal(line.note, "sent Authorization: Bearer [REDACTED] to the server");
  assert.equal(line.pem, "key: [REDACTED] end");
  await resetLogging();
});

Deno.test("redact() keeps the input intact and copes with cycles and errors", () => {
  const input: Record<string, unknown> = { password: "x", list: [{ token: "y" }, "ok"] };
  input.self = input;
  const out = redact(input) as Record<string, any>;
  assert.equal(input.password, "x");
  assert.equal(out.password, "[REDACTED]");
  assert.equal(out.list[0].token, "[REDACTED]");
  assert.equal(out.list[1], "ok");
  assert.equal(out.self, "[Circular]");
  const err = redact(new Error("Header Authorization: Bearer s3cret")) as Error;
  assert.equal(err.message, "Header Authorization: Bearer [REDACTED]");
  assert.equal(redact(undefined), undefined);
  assert.equal(redact(42), 42);
  for (
    const k of ["token", "Authorization", "client-key-data", "tls.key", "refresh_token", "apiKey"]
  ) {
    assert.ok(isSecretKey(k), k);
  }
  for (const k of ["name", "key", "secretName", "namespace", "data", "tls.crt"]) {
    assert.ok(!isSecretKey(k), k);
  }
});

Deno.test("configureLogging() pretty format and level checks", async () => {
  const lines = await capture({ format: "pretty", level: "warning" });
  getLogger(["kubeno"]).info("Dropped");
  getLogger(["kubeno", "manager"]).warn("Leader lost {lease}", {
    lease: "ns/op",
    attempt: 2,
    late: "",
    auth: undefined,
  });
  getLogger(["kubeno", "manager"]).warn("Stopped", { late: "" });
  assert.equal(lines.length, 2);
  // The message shows `lease`; the fields add what it does not, and no empty value.
  assert.match(
    lines[0],
    /^\d{4}-\d\d-\d\dT[\d:.]+Z WARN {2}kubeno\.manager Leader lost ns\/op {2}attempt=2\n$/,
  );
  assert.match(lines[1], /^\d{4}-\d\d-\d\dT[\d:.]+Z WARN {2}kubeno\.manager Stopped\n$/);
  await assert.rejects(configureLogging({ level: "verbose" as never }), /unknown level "verbose"/);
  await assert.rejects(configureLogging({ format: "xml" as never }), /unknown format "xml"/);
  await resetLogging();
});

Deno.test("configureLogging() auto format writes JSON lines to a stderr that is not a terminal", async () => {
  const code = `
    import { configureLogging, getLogger } from ${
    JSON.stringify(new URL("./log.ts", import.meta.url).href)
  };
    await configureLogging({ level: "info" });
    getLogger(["kubeno", "controller"]).info("Reconciled", { controller: "c", namespace: "n", name: "x", reconcileID: "r1", token: "t0ps3cret" });
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--config", new URL("../../deno.json", import.meta.url).pathname, code],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  const line = JSON.parse(stderr.trim().split("\n").at(-1)!);
  assert.deepEqual(
    [
      line.level,
      line.logger,
      line.msg,
      line.controller,
      line.namespace,
      line.name,
      line.reconcileID,
      line.token,
    ],
    ["info", "kubeno.controller", "Reconciled", "c", "n", "x", "r1", "[REDACTED]"],
  );
});
