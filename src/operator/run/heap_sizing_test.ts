import assert from "node:assert/strict";
import { sizedEnv } from "./heap_sizing.ts";
import { heapBudget, heapFlags } from "../../util/memory_limit.ts";

const MI = 2 ** 20;

Deno.test("sizedEnv: the heap budget added, glibc's mmap threshold fixed unless the user set it", () => {
  const flags = heapFlags(heapBudget(256 * MI));
  assert.deepEqual(sizedEnv({ HOME: "/home/op" }, flags), {
    HOME: "/home/op",
    DENO_V8_FLAGS: "--max-old-space-size=144,--max-semi-space-size=4",
    MALLOC_MMAP_THRESHOLD_: "1048576",
    KUBENO_HEAP_SIZED: "1",
  });
  const own = { DENO_V8_FLAGS: "--stack-size=2000", MALLOC_MMAP_THRESHOLD_: "4194304" };
  const env = sizedEnv(own, flags);
  assert.equal(
    env.DENO_V8_FLAGS,
    "--stack-size=2000,--max-old-space-size=144,--max-semi-space-size=4",
  );
  assert.equal(env.MALLOC_MMAP_THRESHOLD_, "4194304", "the user's own threshold is kept");
  assert.equal(own.DENO_V8_FLAGS, "--stack-size=2000", "the given environment is not changed");
});

Deno.test("sizeHeap without FFI permission (a compiled operator) says which DENO_V8_FLAGS to set", async () => {
  const dir = await Deno.makeTempDir();
  const script = `${dir}/size.ts`;
  await Deno.writeTextFile(
    script,
    `import { sizeHeap } from "${new URL("./heap_sizing.ts", import.meta.url).href}";
import { configureLogging } from "${new URL("../../util/log.ts", import.meta.url).href}";
await configureLogging({ level: "info", format: "json" });
const s = sizeHeap(256 * 1024 * 1024);
console.log(JSON.stringify({ limit: s.heapLimitBytes, budget: s.budget?.heapLimitBytes }));
`,
  );
  try {
    // A compiled operator's permissions: no --allow-ffi; a clean environment (no DENO_V8_FLAGS).
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-check",
        "--config",
        new URL("../../../deno.json", import.meta.url).pathname,
        "--allow-read",
        "--allow-env",
        script,
      ],
      clearEnv: true,
      env: { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, text);
    assert.match(
      text,
      /exceeds 156 MiB, the heap budget for the memory limit 256 MiB \(--memory-limit\); set DENO_V8_FLAGS=--max-old-space-size=144,--max-semi-space-size=4 \(the generated Deployment does\)/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
