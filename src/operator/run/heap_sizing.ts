/**
 * `sizeHeap`, `run`'s first step: a V8 heap that fits the container's memory limit
 * (the budget from `util/memory_limit.ts`, which the generated Deployment uses too).
 *
 * @module
 */
import { getHeapStatistics } from "node:v8";
import { getLogger } from "../../util/log.ts";
import {
  type CgroupFiles,
  type CgroupMemoryLimit,
  type HeapBudget,
  heapBudget,
  heapFlags,
  MALLOC_ENV,
  readCgroupMemoryLimit,
} from "../../util/memory_limit.ts";

//
// V8 fixes its heap limits when the isolate is created; `node:v8`'s setFlagsFromString
// accepts --max-old-space-size at run time but `heap_size_limit` does not move (measured on
// Deno 2.9.6), and Deno's own DENO_USE_CGROUPS=1 sizes the heap to V8's default share of the
// limit (262 MiB of heap for a 256Mi limit: no room for native memory). So:
//
// 1. When the heap already fits (the generated Deployment sets DENO_V8_FLAGS from its own
//    limit, or the user passed heap flags), nothing happens.
// 2. Otherwise, where FFI is permitted (`deno run -A`), the process replaces itself once with
//    execve(2) — same pid, same argv (from /proc/self/cmdline), DENO_V8_FLAGS carrying the
//    budget and MALLOC_ENV added unless set — so the kubelet still sees one process, signals and
//    the exit code need no forwarding, and no parent stays resident inside the limit. Spawning
//    a child instead would keep the parent inside the cgroup: 70 MiB resident once the
//    operator's modules are loaded (measured).
// 3. Otherwise (a compiled operator holds only its own permissions) it logs one warning with
//    the DENO_V8_FLAGS to set, and runs on.

const log = getLogger(["kubeno", "operator"]);

/** Set in the environment of the process that replaced itself, so that it does so once. */
export const SIZED_ENV = "KUBENO_HEAP_SIZED";

/** V8 reports a few pages more than the flags ask for; below this, the heap fits. */
const SLACK_BYTES = 4 * 1024 * 1024;

/** What `run` decided about the heap. */
export interface HeapSizing {
  /** The limit the heap is sized for, and where it came from; undefined without a limit. */
  limit?: { bytes: number; source: string };
  /** The budget for that limit. */
  budget?: HeapBudget;
  /** V8's heap limit now, in bytes. */
  heapLimitBytes: number;
}

function envGet(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/** The user chose heap flags (DENO_V8_FLAGS or `--v8-flags` on the command line). */
function userHeapFlags(): string | undefined {
  const heapFlag = /--max-(old-space|heap)-size/;
  const env = envGet("DENO_V8_FLAGS");
  if (env && heapFlag.test(env) && envGet(SIZED_ENV) === undefined) return "DENO_V8_FLAGS";
  try {
    const cmd = Deno.readTextFileSync("/proc/self/cmdline").split("\0");
    if (cmd.some((a) => a.startsWith("--v8-flags") && heapFlag.test(a))) return "--v8-flags";
  } catch { /* not Linux, or not readable: the heap limit alone decides */ }
  return undefined;
}

/**
 * Sizes the heap for `run`: reads the limit (`override` from `--memory-limit`, else the
 * cgroup's), and when V8's heap limit is above the budget replaces the process with one
 * started with the budget's flags. Returns only when the process runs on.
 *
 * @param override `--memory-limit` in bytes; `null` turns sizing off.
 * @param files Where the cgroup files are read (tests).
 * @returns What was decided, for the log and the metrics.
 */
export function sizeHeap(
  override: number | null | undefined,
  files?: CgroupFiles,
): HeapSizing {
  const heapLimitBytes = getHeapStatistics().heap_size_limit;
  if (override === null) return { heapLimitBytes };
  const found: CgroupMemoryLimit | undefined = override === undefined
    ? readCgroupMemoryLimit(files)
    : { bytes: override, source: "--memory-limit" };
  if (found?.bytes === undefined) return { heapLimitBytes };
  const limit = { bytes: found.bytes, source: found.source };
  const budget = heapBudget(limit.bytes);
  const sizing = { limit, budget, heapLimitBytes };
  const mib = (n: number) => `${Math.round(n / 2 ** 20)} MiB`;
  if (heapLimitBytes <= budget.heapLimitBytes + SLACK_BYTES) {
    if (envGet(SIZED_ENV) !== undefined) {
      log.info(
        `Restarted with a V8 heap limit of ${mib(heapLimitBytes)} for the memory limit ${
          mib(limit.bytes)
        } (${limit.source})`,
      );
    }
    return sizing;
  }
  const why = `V8's heap limit ${mib(heapLimitBytes)} exceeds ${
    mib(budget.heapLimitBytes)
  }, the heap budget for the memory limit ${mib(limit.bytes)} (${limit.source})`;
  const chosen = userHeapFlags();
  if (chosen) {
    log.warn(`${why}; keeping the heap size that ${chosen} sets`);
    return sizing;
  }
  const flags = heapFlags(budget);
  if (envGet(SIZED_ENV) === undefined && reexec(flags)) return sizing; // not reached
  log.warn(`${why}; set DENO_V8_FLAGS=${flags} (the generated Deployment does)`);
  return sizing;
}

/**
 * The environment a process restarted for its heap budget runs with: `env` with `flags` added
 * to DENO_V8_FLAGS, {@linkcode MALLOC_ENV} unless `env` sets that variable, and
 * {@linkcode SIZED_ENV}.
 *
 * @param env The current environment.
 * @param flags From {@linkcode heapFlags}.
 * @returns A new environment.
 */
export function sizedEnv(env: Record<string, string>, flags: string): Record<string, string> {
  const out = { ...env };
  out.DENO_V8_FLAGS = out.DENO_V8_FLAGS ? `${out.DENO_V8_FLAGS},${flags}` : flags;
  out[MALLOC_ENV.name] ??= MALLOC_ENV.value;
  out[SIZED_ENV] = "1";
  return out;
}

/**
 * Replaces this process with itself started with `flags` added to DENO_V8_FLAGS (and
 * {@linkcode MALLOC_ENV} unless the environment sets it), through execve(2). Returns false
 * when it cannot (not Linux, no FFI or environment permission, no libc found, execve failed);
 * on success it does not return.
 */
function reexec(flags: string): boolean {
  if (Deno.build.os !== "linux") return false;
  if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return false;
  let libc: Deno.DynamicLibrary<{ execve: Deno.ForeignFunction }> | undefined;
  for (const name of ["libc.so.6", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"]) {
    try {
      libc = Deno.dlopen(name, {
        execve: { parameters: ["buffer", "buffer", "buffer"], result: "i32" },
      });
      break;
    } catch { /* try the next name */ }
  }
  if (!libc) return false;
  try {
    const argv = Deno.readTextFileSync("/proc/self/cmdline").split("\0").slice(0, -1);
    const env = sizedEnv(Deno.env.toObject(), flags);
    const keep: Uint8Array[] = [];
    const cString = (s: string) => {
      const b = new TextEncoder().encode(`${s}\0`);
      keep.push(b);
      return b;
    };
    const cArray = (items: string[]) => {
      const ptrs = new BigUint64Array(items.length + 1);
      items.forEach((s, i) => {
        ptrs[i] = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(cString(s))));
      });
      return ptrs;
    };
    const envp = cArray(Object.entries(env).map(([k, v]) => `${k}=${v}`));
    libc.symbols.execve(cString(Deno.execPath()), cArray(argv), envp);
    return false; // execve returned: it failed
  } catch {
    return false;
  } finally {
    libc.close();
  }
}
