// Runs a test control plane by hand for demos and debugging:
//   deno task testenv:up [--workloads]
// Prints the kubeconfig path and stays up until Ctrl-C.
import { startControlPlane } from "../testing.ts";

const workloads = Deno.args.includes("--workloads");
const unknown = Deno.args.filter((a) => a !== "--workloads");
if (unknown.length) {
  console.error(
    `testenv:up: unknown argument "${unknown[0]}"; usage: deno task testenv:up [--workloads]`,
  );
  Deno.exit(2);
}
const started = performance.now();
const cp = await startControlPlane({ workloads, progress: (l) => console.error(l) });
console.log(
  `Kubernetes ${cp.version} control plane ready in ${
    ((performance.now() - started) / 1000).toFixed(1)
  } s${workloads ? " (with workloads)" : ""}`,
);
console.log(`  API server: ${cp.server}`);
console.log(`  export KUBECONFIG=${cp.kubeconfigPath}`);
console.log(`  kubectl:    ${cp.binary("kubectl")}`);
console.log("Press Ctrl-C to stop.");
const stop = async () => {
  console.log("\nStopping the control plane...");
  await cp.stop();
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
