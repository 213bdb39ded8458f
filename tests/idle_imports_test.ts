// What an idle operator loads: libraries it does not need until a feature is on stay unloaded
// (issue 29, idle memory). A child Deno loads the controller machinery (client, manager,
// reconcile, kinds, a defined resource) with an import map that routes each optional library
// through a marker module, then reports which markers ran. Each library costs RSS and
// start-up time (measured): @opentelemetry/api ~0.7 MiB and 15-20 ms; LogTape,
// with the Node.js `util` module its formatters import, ~6 MiB and 30 ms.
import assert from "node:assert/strict";

const ROOT = new URL("..", import.meta.url).pathname;

interface Probe {
  loaded: string[];
  tracing: boolean;
  /** Lines a kubeno logger wrote (with `configure`: after `configureLogging`). */
  lines: string[];
}

/**
 * Runs the probe in a child Deno with the repo's import map, `libraries` routed through
 * markers, and `env`.
 */
async function probe(
  libraries: string[],
  env: Record<string, string> = {},
  configure = false,
): Promise<Probe> {
  const dir = await Deno.makeTempDir({ prefix: "kubeno-idle-imports-" });
  try {
    const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
    const imports: Record<string, string> = { ...config.imports };
    for (const name of libraries) {
      const marker = `${dir}/${name.replaceAll(/[@/]/g, "_")}.ts`;
      await Deno.writeTextFile(
        marker,
        `((globalThis as any).__kubenoLoaded ??= []).push(${JSON.stringify(name)});\n` +
          `export * from ${JSON.stringify(imports[name])};\n`,
      );
      imports[name] = `file://${marker}`;
    }
    await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify({ imports }));
    await Deno.copyFile(`${ROOT}deno.lock`, `${dir}/deno.lock`);
    const script = `${dir}/probe.ts`;
    await Deno.writeTextFile(
      script,
      [
        `import "${ROOT}src/client/client.ts";`,
        `import "${ROOT}src/runtime/manager/manager.ts";`,
        `import "${ROOT}src/runtime/controller/reconcile.ts";`,
        `import "${ROOT}src/core/kinds.ts";`,
        `import "${ROOT}bench/_bench_resource.ts";`,
        `import { tracing } from "${ROOT}src/util/trace.ts";`,
        `import { configureLogging, getLogger } from "${ROOT}src/util/log.ts";`,
        `const log = getLogger(["kubeno", "probe"]).with({ probe: 1 });`,
        `const lines: string[] = [];`,
        configure ? `await configureLogging({ format: "json", write: (l) => lines.push(l) });` : "",
        `log.info("Probed {what}", { what: "imports" });`,
        `const loaded = [...((globalThis as any).__kubenoLoaded ?? [])];`,
        `console.log(JSON.stringify({ loaded, tracing: tracing(), lines }));`,
      ].join("\n"),
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--config", `${dir}/deno.json`, script],
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", ...env },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.ok(out.success, `The import probe failed:\n${stderr}`);
    return JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("with tracing off, the controller machinery does not load @opentelemetry/api", async () => {
  const { loaded, tracing } = await probe(["@opentelemetry/api"]);
  assert.equal(tracing, false);
  assert.deepEqual(loaded, [], `Loaded at idle: ${loaded.join(", ")}`);
});

Deno.test("with OTEL_DENO=true, @opentelemetry/api is loaded at start and spans are recorded", async () => {
  const { loaded, tracing } = await probe(["@opentelemetry/api"], { OTEL_DENO: "true" });
  assert.deepEqual(loaded, ["@opentelemetry/api"]);
  assert.equal(tracing, true);
});

Deno.test("until logging is configured, kubeno's loggers do not load LogTape", async () => {
  const { loaded, lines } = await probe(["@logtape/logtape"]);
  assert.deepEqual(loaded, [], `Loaded at idle: ${loaded.join(", ")}`);
  assert.deepEqual(lines, []);
});

Deno.test("configureLogging loads LogTape, and loggers made before it write through it", async () => {
  const { loaded, lines } = await probe(["@logtape/logtape"], {}, true);
  assert.deepEqual(loaded, ["@logtape/logtape"]);
  assert.equal(lines.length, 1, lines.join(""));
  const line = JSON.parse(lines[0]);
  assert.equal(line.msg, "Probed imports");
  assert.equal(line.logger, "kubeno.probe");
  assert.equal(line.probe, 1);
});

// The modules an operator program loads at start are its static import graph (`deno info`):
// the webhook server's node:tls, node:net and node:crypto (about 2.5 MiB of RSS, and start-up time),
// OpenTelemetry and LogTape are imported only when the feature is on.
Deno.test("an operator program's static import graph leaves out the webhook server, OpenTelemetry and LogTape", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", `${ROOT}examples/myapp.ts`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: {
      specifier: string;
      dependencies?: { isDynamic?: boolean; code?: { specifier?: string } }[];
    }[];
  };
  const modules = new Map(info.modules.map((m) => [m.specifier, m]));
  const staticGraph = new Set<string>();
  const todo = [...info.roots];
  while (todo.length) {
    const specifier = todo.pop()!;
    if (staticGraph.has(specifier)) continue;
    staticGraph.add(specifier);
    for (const dep of modules.get(specifier)?.dependencies ?? []) {
      if (!dep.isDynamic && dep.code?.specifier) todo.push(dep.code.specifier);
    }
  }
  assert.ok(staticGraph.has(`file://${ROOT}src/operator/run/cmd_run.ts`), "the graph has `run`");
  const unwanted = [...staticGraph].filter((s) =>
    /^node:(tls|net|crypto)$|@opentelemetry\/api|@logtape\/logtape|\/src\/webhook\/(server|webhooks|cert_dir|self_managed_certs)\.ts$/
      .test(s)
  );
  assert.deepEqual(unwanted, [], "statically imported by examples/myapp.ts");
});
