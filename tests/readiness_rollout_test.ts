// builtinReadiness against kubectl on a real control plane with workloads: a Deployment is
// rolled out (scale up, image change, scale down, image change at one replica) and at every
// status change seen, `kubectl rollout status --watch=false` and kubeno judge the same object.
// The object is read before and after kubectl runs: only when its resourceVersion did not move
// in between did both judge the same status, and then the verdicts and messages must be equal.
// `minReadySeconds` keeps each intermediate status up long enough to be seen.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import type { ControlPlane } from "../src/testing/control_plane.ts";
import { builtinReadiness, type Readiness } from "../src/core/readiness.ts";
import type { KubeObject } from "../src/core/object.ts";

const PATH = "/apis/apps/v1/namespaces/default/deployments";
const NAME = "rollout";

type Verdict = "done" | "waiting" | "error";

interface Step {
  phase: string;
  status: string;
  kubectl: Verdict;
  kubeno: Verdict;
  kubectlMessage: string;
  kubenoMessage: string;
}

function deployment(replicas: number, image: string) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: NAME },
    spec: {
      replicas,
      minReadySeconds: 2,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      selector: { matchLabels: { app: NAME } },
      template: {
        metadata: { labels: { app: NAME } },
        spec: { containers: [{ name: "web", image }] },
      },
    },
  };
}

async function read(cp: ControlPlane): Promise<KubeObject> {
  const res = await cp.request("GET", `${PATH}/${NAME}`);
  assert.equal(res.status, 200, `GET the Deployment: ${JSON.stringify(res.body)}`);
  return res.body;
}

async function patch(cp: ControlPlane, body: unknown): Promise<void> {
  const res = await cp.request("PATCH", `${PATH}/${NAME}`, body, {
    "content-type": "application/merge-patch+json",
  });
  assert.equal(res.status, 200, `PATCH the Deployment: ${JSON.stringify(res.body)}`);
}

/** kubectl's verdict: an error exits non-zero; `--watch=false` exits 0 whether done or not. */
async function kubectlVerdict(cp: ControlPlane): Promise<{ verdict: Verdict; message: string }> {
  const out = await cp.kubectl("rollout", "status", `deployment/${NAME}`, "--watch=false");
  if (out.code !== 0) {
    return { verdict: "error", message: out.stderr.trim().replace(/^error: /, "") };
  }
  const message = out.stdout.trim();
  return { verdict: message.endsWith("successfully rolled out") ? "done" : "waiting", message };
}

const verdictOf = (r: Readiness): Verdict => r.ready ? "done" : r.failed ? "error" : "waiting";

function describe(d: KubeObject): string {
  const s = (d as any).status ?? {};
  return `gen ${d.metadata.generation}/obs ${s.observedGeneration ?? 0} spec ${
    (d as any).spec.replicas
  }: replicas ${s.replicas ?? 0}, updated ${s.updatedReplicas ?? 0}, ready ${
    s.readyReplicas ?? 0
  }, available ${s.availableReplicas ?? 0}`;
}

/** Samples the Deployment until kubectl says its rollout is done, judging each status change. */
async function follow(cp: ControlPlane, phase: string, steps: Step[]): Promise<void> {
  const deadline = Date.now() + 90_000;
  let last = "";
  while (Date.now() < deadline) {
    const before = await read(cp);
    const status = describe(before);
    if (status === last) {
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    const kubectl = await kubectlVerdict(cp);
    const after = await read(cp);
    if (after.metadata.resourceVersion !== before.metadata.resourceVersion) continue;
    last = status;
    const kubeno = builtinReadiness(before)!;
    steps.push({
      phase,
      status,
      kubectl: kubectl.verdict,
      kubeno: verdictOf(kubeno),
      kubectlMessage: kubectl.message,
      kubenoMessage: kubeno.message,
    });
    if (kubectl.verdict !== "waiting") return;
  }
  throw new Error(`The rollout did not finish within 90 s (${phase}); last status: ${last}`);
}

Deno.test("readiness: kubeno's verdict is kubectl rollout status's at every step of a rollout", async () => {
  await using cp = await startControlPlane({ workloads: true });
  const steps: Step[] = [];
  const created = await cp.request("POST", PATH, deployment(1, "nginx:1.0"));
  assert.equal(created.status, 201, JSON.stringify(created.body));
  await follow(cp, "create (1 replica)", steps);
  await patch(cp, { spec: { replicas: 3 } });
  await follow(cp, "scale up to 3", steps);
  await patch(cp, deployment(3, "nginx:2.0"));
  await follow(cp, "image change at 3", steps);
  await patch(cp, { spec: { replicas: 1 } });
  await follow(cp, "scale down to 1", steps);
  await patch(cp, deployment(1, "nginx:3.0"));
  await follow(cp, "image change at 1", steps);

  console.table(steps.map((s) => ({
    phase: s.phase,
    status: s.status,
    kubectl: s.kubectl,
    kubeno: s.kubeno,
    message: s.kubectlMessage,
  })));
  const wrong = (pick: (s: Step) => boolean) =>
    steps.filter(pick).map((s) =>
      `${s.phase}, ${s.status}: kubectl ${s.kubectl} ("${s.kubectlMessage}"), kubeno ${s.kubeno} ("${s.kubenoMessage}")`
    );
  assert.deepEqual(wrong((s) => s.kubeno !== s.kubectl), [], "verdicts");
  assert.deepEqual(wrong((s) => s.kubenoMessage !== s.kubectlMessage), [], "messages");
  for (const phase of ["image change at 3", "image change at 1"]) {
    assert.ok(
      steps.some((s) =>
        s.phase === phase && /old replicas are pending termination/.test(s.kubectlMessage)
      ),
      `${phase}: a status with old replicas pending termination was seen`,
    );
  }
  assert.equal(steps.at(-1)?.kubectl, "done");
});
