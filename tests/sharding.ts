// `deno task sharding [--objects 6000]`: issue 18's sharding scenario at full size (see
// tests/_sharding.ts): three replicas share the objects, one is SIGKILLed mid-load, a fourth
// joins. Prints the measurements and exits 1 when an expectation failed.
import { parseArgs } from "node:util";
import { runSharding } from "./_sharding.ts";

const { values: args } = parseArgs({ args: Deno.args, options: { objects: { type: "string" } } });
const objects = Number(args.objects ?? 6000);
if (!(Number.isInteger(objects) && objects >= 12)) {
  console.error("Usage: deno task sharding [--objects N] with N >= 12");
  Deno.exit(2);
}
const report = await runSharding({ objects, log: (l) => console.log(l) });
console.log(`\nMeasured:\n  ${report.measured.join("\n  ")}`);
if (report.problems.length) {
  console.log(`\nProblems:\n  ${report.problems.join("\n  ")}`);
  Deno.exit(1);
}
