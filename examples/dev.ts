/**
 * `deno task dev`: the one-command local demo. Starts a real control plane with workloads
 * (etcd, kube-apiserver, controller-manager, scheduler and kwok's fake nodes) on loopback,
 * installs the Myapp CRD and webhooks, runs the operator, applies `myapp-sample.yaml` and
 * follows the sample to `Running`. Stays up until Ctrl-C.
 *
 * @module
 */
import { createClient, fromYaml, isNotFound, type KubeObject } from "../mod.ts";
import { Myapp, myappOperator } from "./myapp.ts";
import { startControlPlane } from "../testing.ts";

const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;
const say = (line: string) => console.log(`dev: ${line}`);

say(
  "starting a Kubernetes control plane with workloads (the first run builds it from Go modules and says so)",
);
const cp = await startControlPlane({ workloads: true, progress: (l) => say(l) });
say(`control plane ${cp.version} ready at ${cp.server} (${elapsed()})`);
say(`to use kubectl: export KUBECONFIG=${cp.kubeconfigPath}`);

const kubeconfig = ["--kubeconfig", cp.kubeconfigPath];
if (await myappOperator.main(["install", ...kubeconfig]) !== 0) {
  await cp.stop();
  Deno.exit(1);
}

say("starting the operator: deno run -A examples/myapp.ts run");
const operatorProcess = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "-A",
    new URL("./myapp.ts", import.meta.url).pathname,
    "run",
    ...kubeconfig,
    "--namespace=default",
    "--metrics-bind-address=0",
    "--health-probe-bind-address=0",
    "--log-format=pretty",
  ],
  stdin: "null",
}).spawn();

const client = await createClient({ kubeconfig: cp.kubeconfigPath });
const [sample] = fromYaml(
  await Deno.readTextFile(new URL("./myapp-sample.yaml", import.meta.url)),
) as KubeObject[];
const name = sample.metadata.name!;
const namespace = sample.metadata.namespace ?? "default";

// The webhook must be serving before the API server accepts Myapps; retry until it does.
for (let attempt = 0;; attempt++) {
  try {
    await client.apply(Myapp, sample as never, { fieldManager: "kubeno-dev", force: true });
    break;
  } catch (e) {
    if (attempt > 120) throw e;
    await new Promise((r) => setTimeout(r, 500));
  }
}
say(`applied ${namespace}/${name} from examples/myapp-sample.yaml (${elapsed()})`);

let last = "";
for (;;) {
  let app;
  try {
    app = await client.get(Myapp, name, { namespace });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
  const phase = app?.status?.phase ?? "(no status yet)";
  const line = `${namespace}/${name}: phase ${phase}, ready ${
    app?.status?.readyReplicas ?? 0
  }/${app?.spec.replicas}`;
  if (line !== last) say(`${line} (${elapsed()})`);
  last = line;
  if (phase === "Running") break;
  await new Promise((r) => setTimeout(r, 250));
}
say(`Myapp ${name} is Running after ${elapsed()}; try: kubectl get myapps -A`);

const stop = async () => {
  say("stopping the operator and the control plane");
  try {
    operatorProcess.kill("SIGTERM");
  } catch { /* already gone */ }
  await operatorProcess.status;
  client.close();
  await cp.stop();
  say("stopped");
  Deno.exit(0);
};
// Listen before saying so: a Ctrl-C right after that line must reach stop().
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
say("press Ctrl-C to stop");
