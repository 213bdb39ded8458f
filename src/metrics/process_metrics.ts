/**
 * The standard `process_*` metrics (as client_golang's process collector names them), read
 * from `/proc/self` on Linux and from `Deno.memoryUsage()` elsewhere, and the V8 heap's
 * `nodejs_heap_*` metrics (as Node's prom-client names them) with its limit.
 *
 * @module
 */

import { getHeapStatistics } from "node:v8";
import type { Registry } from "./registry.ts";

// procfs reports CPU time in USER_HZ ticks, 100 on every Linux that Kubernetes runs on.
const USER_HZ = 100;
// Without /proc: roughly when this module was loaded, i.e. process start.
const FALLBACK_START = (Date.now() - performance.now()) / 1000;

/**
 * Adds `process_cpu_seconds_total`, `process_resident_memory_bytes`,
 * `process_virtual_memory_bytes`, `process_start_time_seconds`, `process_open_fds` and
 * `process_max_fds`, and the V8 heap's `nodejs_heap_size_used_bytes`,
 * `nodejs_heap_size_total_bytes`, `nodejs_heap_size_limit_bytes` (what the heap may grow to:
 * `run` sizes it to the memory limit) and `nodejs_external_memory_bytes`, refreshed at every
 * scrape. Metrics whose source is unavailable (no
 * `/proc`, or no read permission) are left out rather than reported as 0; resident memory
 * and start time are always there.
 *
 * @param registry Where the metrics live.
 *
 * @example Reporting process metrics
 * ```ts
 * import { Registry } from "./registry.ts";
 * import { registerProcessMetrics } from "./process_metrics.ts";
 *
 * const registry = new Registry();
 * registerProcessMetrics(registry);
 * const text = await registry.metrics();
 * if (!/^process_resident_memory_bytes \d/m.test(text)) throw new Error(text);
 * if (!/^nodejs_heap_size_limit_bytes \d/m.test(text)) throw new Error(text);
 * ```
 */
export function registerProcessMetrics(registry: Registry): void {
  const rss = registry.gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
  });
  const start = registry.gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since unix epoch in seconds.",
  });
  const heap = {
    used: registry.gauge({
      name: "nodejs_heap_size_used_bytes",
      help: "V8 heap used in bytes.",
    }),
    total: registry.gauge({
      name: "nodejs_heap_size_total_bytes",
      help: "V8 heap size in bytes.",
    }),
    limit: registry.gauge({
      name: "nodejs_heap_size_limit_bytes",
      help: "V8 heap limit in bytes: the size past which the process fails with out of memory.",
    }),
    external: registry.gauge({
      name: "nodejs_external_memory_bytes",
      help: "Memory of array buffers and other objects outside the V8 heap, in bytes.",
    }),
  };
  let procStart: number | undefined;
  let bootTime: number | undefined;
  registry.onCollect(async () => {
    const mem = Deno.memoryUsage();
    rss.set(undefined, mem.rss);
    heap.used.set(undefined, mem.heapUsed);
    heap.total.set(undefined, mem.heapTotal);
    heap.limit.set(undefined, getHeapStatistics().heap_size_limit);
    heap.external.set(undefined, mem.external);
    start.set(undefined, procStart ?? FALLBACK_START);
    const stat = await readProc("/proc/self/stat");
    if (!stat) return;
    // Fields after the command name, which may itself contain spaces and parentheses.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const cpu = registry.counter({
      name: "process_cpu_seconds_total",
      help: "Total user and system CPU time spent in seconds.",
    });
    const seconds = (Number(f[11]) + Number(f[12])) / USER_HZ;
    cpu.inc(undefined, Math.max(0, seconds - cpu.get()));
    registry.gauge({
      name: "process_virtual_memory_bytes",
      help: "Virtual memory size in bytes.",
    }).set(undefined, Number(f[20]));
    bootTime ??= await readBootTime();
    if (bootTime !== undefined) {
      procStart = bootTime + Number(f[19]) / USER_HZ;
      start.set(undefined, procStart);
    }
    const fds = await countFds();
    if (fds !== undefined) {
      registry.gauge({ name: "process_open_fds", help: "Number of open file descriptors." })
        .set(undefined, fds);
    }
    const max = await maxFds();
    if (max !== undefined) {
      registry.gauge({ name: "process_max_fds", help: "Maximum number of open file descriptors." })
        .set(undefined, max);
    }
  });
}

async function readProc(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return undefined;
  }
}

async function readBootTime(): Promise<number | undefined> {
  const stat = await readProc("/proc/stat");
  const m = stat && /^btime (\d+)$/m.exec(stat);
  return m ? Number(m[1]) : undefined;
}

async function countFds(): Promise<number | undefined> {
  try {
    let n = 0;
    for await (const _ of Deno.readDir("/proc/self/fd")) n++;
    return n;
  } catch {
    return undefined;
  }
}

async function maxFds(): Promise<number | undefined> {
  const limits = await readProc("/proc/self/limits");
  const m = limits && /^Max open files\s+(\d+)/m.exec(limits);
  return m ? Number(m[1]) : undefined;
}
