// The "workloads" part of the test control plane: kube-controller-manager (garbage
// collection, Deployments, namespaces, service accounts), kube-scheduler, and kwok driving
// fake nodes so that pods become Ready without a kubelet.
import { realClock } from "../util/clock.ts";
import { type AssetName, kwokStages } from "./assets.ts";
import { freePort, Supervised } from "./process.ts";
import { KubenoError } from "../util/error.ts";

/** Thrown when a workload component cannot start; the message includes its log tail. */
export class WorkloadsError extends KubenoError {
  override name = "WorkloadsError";
}

/** What starting workloads needs from the control plane. */
export interface WorkloadHost {
  readonly dir: string;
  readonly kubeconfigPath: string;
  track(p: Supervised): Supervised;
  request(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

/**
 * Starts kube-controller-manager, kube-scheduler and kwok against a running API server,
 * creates `nodes` fake nodes and waits until they are Ready and the default ServiceAccount
 * exists (pods cannot be admitted without it).
 */
export async function startWorkloads(
  cp: WorkloadHost,
  assets: Record<AssetName, string>,
  nodes: number,
): Promise<void> {
  const dir = cp.dir;
  const kc = cp.kubeconfigPath;
  const common = [
    `--kubeconfig=${kc}`,
    `--authentication-kubeconfig=${kc}`,
    `--authorization-kubeconfig=${kc}`,
  ];
  const kcmPort = freePort(), schedPort = freePort();
  const kcm = cp.track(
    new Supervised("kube-controller-manager", assets["kube-controller-manager"], [
      ...common,
      `--root-ca-file=${dir}/ca.crt`,
      `--service-account-private-key-file=${dir}/sa.key`,
      "--leader-elect=false",
      "--use-service-account-credentials=false",
      "--bind-address=127.0.0.1",
      `--secure-port=${kcmPort}`,
      `--cert-dir=${dir}/kcm-certs`,
      "--controllers=*,-node-ipam-controller",
    ], `${dir}/kube-controller-manager.log`),
  );
  const scheduler = cp.track(
    new Supervised("kube-scheduler", assets["kube-scheduler"], [
      ...common,
      "--leader-elect=false",
      "--bind-address=127.0.0.1",
      `--secure-port=${schedPort}`,
      `--cert-dir=${dir}/scheduler-certs`,
    ], `${dir}/kube-scheduler.log`),
  );
  const stages = kwokStages();
  if (!stages) {
    throw new WorkloadsError(
      "Cannot start kwok: kwok-stages.yaml is missing from the asset cache; run `deno task testenv:build`",
    );
  }
  const kwok = cp.track(
    new Supervised(
      "kwok",
      assets.kwok,
      [
        `--kubeconfig=${kc}`,
        `--config=${stages}`,
        "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        "--node-lease-duration-seconds=40",
      ],
      `${dir}/kwok.log`,
      { HOME: dir },
    ),
  );
  for (let i = 0; i < nodes; i++) {
    const name = `kwok-node-${i}`;
    const res = await cp.request("POST", "/api/v1/nodes", {
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name,
        annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
        labels: { "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", type: "kwok" },
      },
      status: {
        allocatable: { cpu: "32", memory: "256Gi", pods: "110" },
        capacity: { cpu: "32", memory: "256Gi", pods: "110" },
      },
    });
    if (res.status >= 300) {
      throw new WorkloadsError(
        `Cannot create fake node "${name}": HTTP ${res.status} ${JSON.stringify(res.body)}`,
      );
    }
  }
  // Ready when every fake node is Ready, the scheduler and controller-manager are healthy and
  // the default ServiceAccount exists (pods cannot be admitted without it).
  const deadline = Date.now() + 120_000;
  for (;;) {
    for (const p of [kcm, scheduler, kwok]) {
      if (p.exitCode !== undefined) {
        throw new WorkloadsError(
          `${p.name} exited with code ${p.exitCode}; last log lines:\n${await p.logTail()}`,
        );
      }
    }
    const nodesRes = await cp.request("GET", "/api/v1/nodes?labelSelector=type%3Dkwok");
    const ready = (nodesRes.body?.items ?? []).filter((n: any) =>
      n.status?.conditions?.some((c: any) =>
        c.type === "Ready" && c.status === "True"
      )
    ).length;
    const sa = await cp.request("GET", "/api/v1/namespaces/default/serviceaccounts/default");
    if (ready === nodes && sa.status === 200) return;
    if (Date.now() > deadline) {
      throw new WorkloadsError(
        `Workloads did not become ready: ${ready}/${nodes} fake nodes Ready, default ServiceAccount HTTP ${sa.status}; kwok log:\n${await kwok
          .logTail()}`,
      );
    }
    await realClock.sleep(200);
  }
}
