// A CPU profile of kubeno's converge contender (bench/kubeno_converge.ts): where its CPU goes
// while it converges N Bench objects, to explain the converge rows of BENCHMARKS.md. The
// harness starts a control plane, creates the workload and runs the contender under V8's
// sampling profiler (node:inspector, in the contender's own process), stops the profiler the
// moment every Bench has converged and prints self time grouped by the nearest kubeno frame
// on the stack (so fetch's internals count under the kubeno call that made the request).
//
//   deno run -A bench/converge_profile.ts [--objects 2000] [--out profile.cpuprofile]
//
// The .cpuprofile it writes opens in Chrome DevTools. Measured and printed, never asserted.
import { parseArgs } from "node:util";
import { Session } from "node:inspector/promises";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { createClient } from "../src/client/client.ts";
import { ConvergeWatch, createBenches, installWorkload } from "./_workload.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    objects: { type: "string", default: "2000" },
    out: { type: "string" },
    kubeconfig: { type: "string" },
  },
});

interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string };
    children?: number[];
  }[];
  samples: number[];
  timeDeltas: number[];
}

// The contender's process is this module again, told by the variable naming its output (its
// flags are kubeno_converge.ts's, which parses them itself).
const profileOut = Deno.env.get("KUBENO_PROFILE_OUT");
if (profileOut) {
  // In the contender's process: profile from before its modules load until SIGUSR1.
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  await session.post("Profiler.start");
  Deno.addSignalListener("SIGUSR1", async () => {
    const { profile } = await session.post("Profiler.stop") as { profile: CpuProfile };
    await Deno.writeTextFile(profileOut, JSON.stringify(profile));
    console.log("profiled");
  });
  await import("./kubeno_converge.ts");
} else {
  const n = Number(args.objects);
  const out = String(args.out ?? await Deno.makeTempFile({ suffix: ".cpuprofile" }));
  await using cp = await startControlPlane();
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
  await installWorkload(admin);
  await createBenches(admin, n);
  await using watch = await new ConvergeWatch(admin, n).start();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      import.meta.filename!,
      "--kubeconfig",
      cp.kubeconfigPath,
    ],
    env: { KUBENO_PROFILE_OUT: out },
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const started = performance.now();
  let said = "";
  const pump = (async () => {
    for await (const c of child.stdout.pipeThrough(new TextDecoderStream())) said += c;
  })();
  let exited = false;
  child.status.then(() => exited = true);
  const at = await watch.converged;
  child.kill("SIGUSR1");
  while (!said.includes("profiled")) {
    if (exited) throw new Error("The contender exited before it wrote its profile");
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill("SIGTERM");
  await child.status;
  await pump;
  const report = summarize(JSON.parse(await Deno.readTextFile(out)));
  console.log(
    `${n} Benches converged ${(at - started).toFixed(0)} ms after the spawn; ` +
      `busy CPU ${(report.busyUs / 1e3).toFixed(0)} ms (profile in ${out})`,
  );
  for (const [where, us] of report.rows.slice(0, 25)) {
    console.log(
      `${(us / 1e3).toFixed(0).padStart(7)} ms ${
        (100 * us / report.busyUs).toFixed(1).padStart(5)
      }%  ${where}`,
    );
  }
}

/** Self time per nearest kubeno frame (or the runtime's own bucket), busiest first. */
function summarize(p: CpuProfile): { busyUs: number; rows: [string, number][] } {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const root = new URL("../", import.meta.url).href;
  const where = (id: number): string => {
    const top = byId.get(id)!.callFrame;
    if (top.functionName.startsWith("(")) return top.functionName;
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
      const f = byId.get(x)!.callFrame;
      if (f.url.startsWith(root)) {
        return `${f.url.slice(root.length)} ${f.functionName || "(anonymous)"}`;
      }
    }
    return `runtime: ${top.url.split("/").pop() || top.functionName}`;
  };
  const self = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const w = where(id);
    self.set(w, (self.get(w) ?? 0) + p.timeDeltas[i]);
  });
  self.delete("(idle)");
  const rows = [...self].sort((a, b) => b[1] - a[1]);
  return { busyUs: rows.reduce((s, [, us]) => s + us, 0), rows };
}
