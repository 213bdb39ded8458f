// The container's memory limit and the V8 heap that fits in it. V8 sizes its heap from the
// machine's physical memory (4 GiB on this 24 GiB host), never from a cgroup limit, so an
// operator in a 256Mi container lets its heap grow until the kernel kills it. Sizing the heap
// is a share of the limit, as Java's -XX:MaxRAMPercentage is: the rest is native memory
// (the deno binary's pages, V8's code space, TLS and HTTP buffers, array buffers behind
// responses), which no V8 flag bounds. The numbers behind the share are in the README's
// "Memory" section. Sizing the running process's own heap is `run`'s
// (`src/operator/run/heap_sizing.ts`).
//
// Pure apart from `readCgroupMemoryLimit`, which reads /proc and /sys.

/** One mebibyte. */
const MI = 1024 * 1024;

/**
 * Native memory every Deno process holds whatever its load, in MiB: the resident memory of an
 * empty script less its heap (33 MiB resident, 4.5 MiB of heap, Deno 2.9.6 on Linux x86-64).
 */
export const NATIVE_BASE_MIB = 32;

/**
 * The share of the memory limit above {@linkcode NATIVE_BASE_MIB} given to the V8 heap (old
 * and young generation); the rest is native memory that grows with the load (HTTP and TLS
 * buffers, response bodies, the allocator's slack). With 10,000 objects converging, resident
 * memory less heap was 77 MiB with the sized heap and 100 MiB without: 30% of a 256Mi limit
 * above the base leaves 99 MiB for native memory there.
 */
export const HEAP_FRACTION = 0.7;

/** Limits at or above this are "no limit" (cgroup v1 reports 2^63 rounded down to a page). */
const UNLIMITED = 2 ** 60;

/** The V8 heap sized for a memory limit. */
export interface HeapBudget {
  /** The memory limit it was sized for, in bytes. */
  limitBytes: number;
  /** `--max-old-space-size`, in MiB. */
  oldSpaceMiB: number;
  /** `--max-semi-space-size`, in MiB. */
  semiSpaceMiB: number;
  /**
   * The heap limit V8 then reports (`heap_size_limit`): the old space plus a young
   * generation of three semi-spaces, in bytes.
   */
  heapLimitBytes: number;
}

/**
 * The V8 heap for a memory limit: {@linkcode HEAP_FRACTION} of what is above
 * {@linkcode NATIVE_BASE_MIB}, of which a young generation of three semi-spaces, each 1/64 of
 * the limit between 1 and 16 MiB (V8's default is 32 MiB: a 96 MiB young generation, which
 * alone was the difference between 141 and 72 MiB of peak heap at 10,000 objects), and the
 * old space the rest, at least 16 MiB.
 *
 * @param limitBytes The container's memory limit in bytes.
 * @returns The budget.
 * @throws {RangeError} When `limitBytes` is not a positive number.
 *
 * @example The generated Deployment's 256Mi
 * ```ts
 * import { heapBudget } from "./memory_limit.ts";
 * const b = heapBudget(256 * 1024 * 1024);
 * if (b.oldSpaceMiB !== 144 || b.semiSpaceMiB !== 4) throw new Error(JSON.stringify(b));
 * ```
 */
export function heapBudget(limitBytes: number): HeapBudget {
  if (!(limitBytes > 0) || !Number.isFinite(limitBytes)) {
    throw new RangeError(`Cannot size a heap for the memory limit "${limitBytes}"`);
  }
  const limitMiB = limitBytes / MI;
  const semiSpaceMiB = Math.min(16, Math.max(1, Math.round(limitMiB / 64)));
  const heapMiB = Math.floor((limitMiB - NATIVE_BASE_MIB) * HEAP_FRACTION);
  const oldSpaceMiB = Math.max(16, heapMiB - 3 * semiSpaceMiB);
  return {
    limitBytes,
    oldSpaceMiB,
    semiSpaceMiB,
    heapLimitBytes: (oldSpaceMiB + 3 * semiSpaceMiB) * MI,
  };
}

/**
 * The V8 flags of a budget as `DENO_V8_FLAGS` and `--v8-flags=` take them (comma-separated;
 * Deno splits `DENO_V8_FLAGS` on commas only).
 *
 * @param budget From {@linkcode heapBudget}.
 * @returns E.g. `--max-old-space-size=144,--max-semi-space-size=4`.
 *
 * @example Flags for 256Mi
 * ```ts
 * import { heapBudget, heapFlags } from "./memory_limit.ts";
 * const flags = heapFlags(heapBudget(256 * 1024 * 1024));
 * if (flags !== "--max-old-space-size=144,--max-semi-space-size=4") throw new Error(flags);
 * ```
 */
export function heapFlags(budget: HeapBudget): string {
  return `--max-old-space-size=${budget.oldSpaceMiB},--max-semi-space-size=${budget.semiSpaceMiB}`;
}

/**
 * The native-memory setting an operator runs with under a memory limit: glibc malloc's mmap
 * threshold fixed at 1 MiB, as an environment variable (glibc reads it once, at start). The
 * generated Deployment and Dockerfiles set it; `run` adds it when it restarts itself for the
 * heap budget.
 *
 * glibc serves allocations below its mmap threshold from its heaps, and raises the threshold
 * (up to 32 MiB) each time a larger mapped block is freed. The multi-MiB buffers a list page
 * passes through in the runtime (the response body and its decoded text) then come from the
 * heaps, and stay there once freed. An informer's sync of 10,000 ConfigMaps measured 3.3–3.5
 * KB of RSS per object after a full GC and peaked at 102–124 MiB; with the threshold fixed at
 * 1 MiB (which also stops the raising), 3.0 KB and 99–100 MiB, the sync time unchanged
 * (BENCHMARKS.md, "Native memory"). At 128 KiB, glibc's starting value, a converge's CPU rose
 * by 18% in the median of three runs: smaller buffers that the hot path allocates again and
 * again would be mapped and unmapped each time.
 */
export const MALLOC_ENV: { readonly name: string; readonly value: string } = {
  name: "MALLOC_MMAP_THRESHOLD_",
  value: String(2 ** 20),
};

const UNITS: Record<string, number> = {
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

/**
 * Parses a memory quantity as Kubernetes writes it (`256Mi`, `1Gi`, `500M`, `268435456`).
 *
 * @param text The quantity.
 * @returns Bytes, or undefined when `text` is not a positive quantity.
 *
 * @example Quantities
 * ```ts
 * import { parseMemoryQuantity } from "./memory_limit.ts";
 * if (parseMemoryQuantity("256Mi") !== 268435456) throw new Error();
 * if (parseMemoryQuantity("1.5Gi") !== 1610612736) throw new Error();
 * if (parseMemoryQuantity("256MB") !== undefined) throw new Error();
 * ```
 */
export function parseMemoryQuantity(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(|k|M|G|T|Ki|Mi|Gi|Ti)$/.exec(text.trim());
  if (!m) return undefined;
  const bytes = Math.floor(Number(m[1]) * UNITS[m[2]]);
  return bytes > 0 ? bytes : undefined;
}

/** Where a memory limit was read. */
export interface CgroupMemoryLimit {
  /** The limit in bytes, or undefined for none ("max", or a huge value). */
  bytes?: number;
  /** The file it came from. */
  source: string;
}

/** Files to read, injectable for tests. */
export interface CgroupFiles {
  /** Reads a file's text, or returns undefined when it is absent or unreadable. */
  read(path: string): string | undefined;
}

const fsFiles: CgroupFiles = {
  read(path) {
    try {
      return Deno.readTextFileSync(path);
    } catch {
      return undefined;
    }
  },
};

/**
 * Reads the memory limit of this process's own cgroup: cgroup v2's `memory.max` (the `0::`
 * line of `/proc/self/cgroup`), else cgroup v1's `memory.limit_in_bytes` (its `memory`
 * line), else the same files at the mount's root (a container sees its own cgroup as `/`
 * when it has a cgroup namespace, and the kubelet's limit is then on the root). A limit is
 * the smallest one on the path from the process's cgroup up to the root, since a parent's
 * limit binds its children too.
 *
 * @param files How to read files.
 * @returns The limit and its source, or undefined when no cgroup memory controller is
 *   readable (not Linux, no permission).
 *
 * @example No limit on a host without cgroups
 * ```ts
 * import { readCgroupMemoryLimit } from "./memory_limit.ts";
 * const got = readCgroupMemoryLimit({ read: () => undefined });
 * if (got !== undefined) throw new Error(JSON.stringify(got));
 * ```
 */
export function readCgroupMemoryLimit(files: CgroupFiles = fsFiles): CgroupMemoryLimit | undefined {
  const self = files.read("/proc/self/cgroup");
  if (self === undefined) return undefined;
  const lines = self.split("\n").map((l) => l.split(":"));
  const v2 = lines.find((f) => f[0] === "0" && f[1] === "")?.slice(2).join(":");
  const v1 = lines.find((f) => f[1]?.split(",").includes("memory"))?.slice(2).join(":");
  const candidates: [string, string, string][] = [];
  if (v1 !== undefined) candidates.push(["/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"]);
  if (v2 !== undefined) {
    candidates.push(["/sys/fs/cgroup", v2, "memory.max"]);
    candidates.push(["/sys/fs/cgroup/unified", v2, "memory.max"]);
  }
  for (const [mount, path, file] of candidates) {
    let best: CgroupMemoryLimit | undefined;
    for (let dir = path.replace(/\/+$/, "");; dir = dir.slice(0, dir.lastIndexOf("/"))) {
      const source = `${mount}${dir}/${file}`;
      const text = files.read(source)?.trim();
      if (text !== undefined) {
        const n = text === "max" ? Infinity : Number(text);
        const bytes = Number.isFinite(n) && n > 0 && n < UNLIMITED ? n : undefined;
        if (!best) best = { source };
        if (bytes !== undefined && (best.bytes === undefined || bytes < best.bytes)) {
          best = { bytes, source };
        }
      }
      if (dir === "") break;
    }
    if (best) return best;
  }
  return undefined;
}
