// `deno task chaos [--operator widget|myapp] [--objects 600] [--deletes 100]
// [--leader-elect-renew-deadline 20s ...]`: issue 20's chaos scenario at full size (see
// tests/_chaos.ts) with the operator's default lease timings unless given; prints the
// measurements and exits 1 when an expectation failed. `--operator myapp` runs
// examples/myapp.ts with its webhooks (issue 14: `--objects 2000 --deletes 200`).
import { parseArgs } from "node:util";
import { runChaos } from "./_chaos.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    operator: { type: "string" },
    objects: { type: "string" },
    deletes: { type: "string" },
    "leader-elect-lease-duration": { type: "string" },
    "leader-elect-renew-deadline": { type: "string" },
    "leader-elect-retry-period": { type: "string" },
  },
});
const runFlags = Object.entries(args)
  .filter(([k, v]) => k.startsWith("leader-elect-") && v !== undefined)
  .map(([k, v]) => `--${k}=${v}`);
const objects = Number(args.objects ?? 600);
const deletes = Number(args.deletes ?? 100);
const operator = args.operator ?? "widget";
if (
  !(Number.isInteger(objects) && Number.isInteger(deletes) && deletes < objects) ||
  (operator !== "widget" && operator !== "myapp")
) {
  console.error(
    `Usage: deno task chaos [--operator widget|myapp] [--objects N] [--deletes M] with M < N`,
  );
  Deno.exit(2);
}
const report = await runChaos({
  objects,
  deletes,
  runFlags,
  operator,
  log: (l) => console.log(l),
});
const timings = runFlags.length ? runFlags.join(" ") : "default lease timings (15s/10s/2s)";
console.log(
  `\nMeasured (${operator}: ${objects} objects, ${deletes} deleted, ${timings}):\n  ${
    report.measured.join("\n  ")
  }`,
);
if (report.problems.length) {
  console.error(`\nProblems:\n  ${report.problems.join("\n  ")}`);
  Deno.exit(1);
}
console.log("\nAll expectations held.");
