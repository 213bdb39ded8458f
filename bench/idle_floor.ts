// What an idle kubeno operator's RSS is made of, without a cluster: the RSS of a Deno process
// that imports one module graph and then sits idle, split into the pages mapped from files
// (the deno binary's code and read-only data, which the kernel can drop and read back) and
// anonymous memory (V8's heap and compiled code, native buffers). The rows go from an empty
// script to the whole of mod.ts, so each row's difference is what that import costs.
//
//   deno run -A bench/idle_floor.ts [--idle-ms 10000]
//
// The footprint scenario (bench/run.ts --only=footprint) measures the converge operator itself,
// connected and idle; this is the floor under that figure.
import { parseArgs } from "node:util";

const { values } = parseArgs({ args: Deno.args, options: { "idle-ms": { type: "string" } } });
const idleMs = Number(values["idle-ms"] ?? 10_000);
if (!Number.isFinite(idleMs) || idleMs < 1_000) {
  console.error(`--idle-ms ${values["idle-ms"]}: give a number of milliseconds, at least 1000`);
  Deno.exit(2);
}

const root = new URL("../", import.meta.url);
const rows: [string, string[]][] = [
  ["empty Deno script", []],
  ["+ @logtape/logtape (the logger)", ["@logtape/logtape"]],
  ["+ zod (a resource's schema)", ["zod"]],
  ["+ zod + @logtape/logtape", ["zod", "@logtape/logtape"]],
  ["kubeno client (src/client/client.ts)", [new URL("src/client/client.ts", root).href]],
  ["kubeno manager (src/runtime/manager/manager.ts)", [
    new URL("src/runtime/manager/manager.ts", root).href,
  ]],
  ["the converge operator's graph (bench/_bench_resource.ts + manager + reconcile)", [
    new URL("bench/_bench_resource.ts", root).href,
    new URL("src/runtime/manager/manager.ts", root).href,
    new URL("src/runtime/controller/reconcile.ts", root).href,
  ]],
  ["all of mod.ts", [new URL("mod.ts", root).href]],
];

interface Sample {
  rss: number;
  anon: number;
  file: number;
}

async function measure(imports: string[]): Promise<Sample> {
  const code = [
    ...imports.map((s) => `await import(${JSON.stringify(s)});`),
    `console.log("idle");`,
    `setTimeout(() => {}, 600000);`,
  ].join("\n");
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", new URL("deno.json", root).pathname, "-"],
    cwd: root.pathname,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(code));
  await w.close();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("idle")) {
    const { value, done } = await reader.read();
    if (done) {
      const err = await new Response(child.stderr).text();
      throw new Error(`importing ${imports.join(", ")} failed: ${err.trim().split("\n")[0]}`);
    }
    out += value;
  }
  await new Promise((r) => setTimeout(r, idleMs));
  const text = await Deno.readTextFile(`/proc/${child.pid}/smaps_rollup`);
  child.kill("SIGKILL");
  await child.status;
  reader.cancel().catch(() => {});
  await child.stderr.cancel().catch(() => {});
  const kib = (k: string) => Number(text.match(new RegExp(`^${k}:\\s+(\\d+)`, "m"))?.[1] ?? 0);
  const rss = kib("Rss") / 1024, anon = kib("Anonymous") / 1024;
  return { rss, anon, file: rss - anon };
}

console.log(`Idle RSS by import (MiB, after ${idleMs} ms idle; Deno ${Deno.version.deno})\n`);
console.log("| what is imported | RSS | from files | anonymous |");
console.log("|---|---:|---:|---:|");
for (const [name, imports] of rows) {
  const s = await measure(imports);
  console.log(`| ${name} | ${s.rss.toFixed(1)} | ${s.file.toFixed(1)} | ${s.anon.toFixed(1)} |`);
}
