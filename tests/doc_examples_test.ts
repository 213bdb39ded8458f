// JSDoc examples that `deno test --doc` cannot run (they need a live API server, a cluster's
// service account or a long-running process) are fenced `ts ignore` with the reason on the
// fence line. Deno then skips them entirely, so this test type-checks each of them, as the
// module beside it would import it, and requires the stated reason.
import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

interface Example {
  file: string; // repository-relative
  line: number; // 1-based line of the opening fence
  fence: string;
  code: string;
}

async function* sources(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) yield* sources(p);
    else if (e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) yield p;
  }
}

async function ignoredExamples(): Promise<Example[]> {
  const files = [
    ...(await Array.fromAsync(sources(join(ROOT, "src")))),
    ...(await Array.fromAsync(sources(join(ROOT, "runtime")))), // the runtime's entry points
  ];
  for await (const e of Deno.readDir(ROOT)) {
    if (e.isFile && e.name.endsWith(".ts")) files.push(join(ROOT, e.name));
  }
  const out: Example[] = [];
  for (const file of files.sort()) {
    const lines = (await Deno.readTextFile(file)).split("\n");
    for (let i = 0; i < lines.length; i++) {
      const open = /^\s*\*\s?```(ts|typescript)\s+ignore\b(.*)$/.exec(lines[i]);
      if (!open) continue;
      const body: string[] = [];
      let j = i + 1;
      for (; j < lines.length && !/^\s*\*\s?```\s*$/.test(lines[j]); j++) {
        body.push(lines[j].replace(/^\s*\* ?/, ""));
      }
      out.push({ file: relative(ROOT, file), line: i + 1, fence: lines[i], code: body.join("\n") });
      i = j;
    }
  }
  return out;
}

const examples = await ignoredExamples();

Deno.test("every ignored JSDoc example states why it is not run", () => {
  for (const ex of examples) {
    const reason = /```(?:ts|typescript)\s+ignore\b\s*(?:—|--|-|:)?\s*(.*)$/.exec(ex.fence)![1];
    assert.ok(
      reason.trim().length >= 10,
      `${ex.file}:${ex.line}: an ignored example needs its reason on the fence line`,
    );
  }
});

Deno.test("every ignored JSDoc example type-checks", async () => {
  assert.ok(examples.length > 0, "found no ignored JSDoc example: is the fence pattern stale?");
  const tmp = await Deno.makeTempDir({ prefix: "kubeno-doc-examples-" });
  try {
    const written: string[] = [];
    for (const [n, ex] of examples.entries()) {
      // Relative imports resolve against the documented module, as `deno test --doc` does.
      const base = pathToFileURL(join(ROOT, dirname(ex.file)) + "/");
      const code = ex.code.replace(
        /(from\s+|import\s*\(\s*)"(\.{1,2}\/[^"]+)"/g,
        (_, lead, spec) => `${lead}"${new URL(spec, base).href}"`,
      );
      const path = join(tmp, `example_${n}.ts`);
      // A module of its own (top-level await, no clashes between examples).
      await Deno.writeTextFile(path, `${code}\nexport {};\n`);
      written.push(path);
    }
    const res = await new Deno.Command(Deno.execPath(), {
      args: ["check", "--quiet", "--config", join(ROOT, "deno.json"), ...written],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    let report = new TextDecoder().decode(res.stderr);
    for (const [n, ex] of examples.entries()) {
      report = report.replaceAll(`example_${n}.ts`, `${ex.file}:${ex.line} (example_${n}.ts)`);
    }
    assert.equal(res.code, 0, `ignored JSDoc examples do not type-check:\n${report}`);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
