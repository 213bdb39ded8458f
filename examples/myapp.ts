/**
 * The kubebuilder tutorial's operator, written with kubeno: a `Myapp` custom resource whose
 * controller keeps a Deployment in line with it, reports a status phase, cleans up through a
 * finalizer, and is guarded by an admission webhook that defaults fields and refuses more
 * than 100 replicas.
 *
 * ```sh
 * deno run -A examples/myapp.ts install     # apply the CRD, wait until it is Established
 * deno run -A examples/myapp.ts             # run the operator against the current kubeconfig
 * kubectl apply -f examples/myapp-sample.yaml                   # a Myapp; its phase: Running
 * deno run -A examples/myapp.ts manifests   # everything needed to deploy it into a cluster
 * deno run -A examples/myapp.ts manifests | kubectl apply -f -  # deploy it
 * ```
 *
 * A local run (`run`, the default, with `--kubeconfig` or the current context) needs no
 * namespace of its own: it serves the webhooks on 127.0.0.1:9443 with an in-memory
 * certificate, points the webhook configurations at itself until Ctrl-C, and then hands them
 * back as `install` or the deployed manifests wrote them.
 *
 * @module
 */
import {
  admission,
  type ApplyObject,
  type Condition,
  conditionsSchema,
  defineResource,
  deletionStarted,
  Deployment,
  generationChanged,
  listMap,
  type ObjectOf,
  operator,
  or,
  reconcile,
  setCondition,
  z,
} from "../mod.ts";

/** The most replicas a Myapp may ask for; the webhook refuses more. */
export const MAX_REPLICAS = 100;

/** A Myapp: run `image` as `replicas` pods. */
export const Myapp = defineResource({
  group: "apps.kubeno.dev",
  version: "v1alpha1",
  kind: "Myapp",
  plural: "myapps",
  shortNames: ["ma"],
  description: "Myapp runs a container image as a Deployment",
  spec: z.object({
    image: z.string().min(1).describe("Container image to run"),
    replicas: z.int().min(0).default(1).describe("Desired pods"),
    port: z.int().min(1).max(65535).optional().describe("Container port; defaulted to 8080"),
    env: listMap(
      z.array(z.object({
        name: z.string().min(1).describe("Variable name"),
        value: z.string().default("").describe("Variable value"),
      })),
      ["name"],
    ).optional().describe("Environment variables of the container"),
  }),
  status: z.object({
    phase: z.enum(["Pending", "Running", "Failed"]).optional().describe("Where the app is"),
    readyReplicas: z.int().optional().describe("Pods ready"),
    conditions: conditionsSchema,
    observedGeneration: z.int().optional().describe("Generation the status describes"),
  }),
  printerColumns: [
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Ready", type: "integer", jsonPath: ".status.readyReplicas" },
    { name: "Replicas", type: "integer", jsonPath: ".spec.replicas" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
});

/** A Myapp object as the controller sees it. */
export type MyappObject = ObjectOf<typeof Myapp>;

/** The Deployment a Myapp wants: same name and namespace, one container. */
export function deploymentFor(app: MyappObject): ApplyObject<Deployment> {
  const labels = {
    "app.kubernetes.io/name": "myapp",
    "app.kubernetes.io/instance": app.metadata.name!,
  };
  const { image, replicas, port, env } = app.spec;
  return {
    metadata: { name: app.metadata.name!, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [{
            name: "app",
            image,
            ...(port ? { ports: [{ name: "http", containerPort: port }] } : {}),
            ...(env?.length ? { env } : {}),
          }],
        },
      },
    },
  };
}

/** Where a Myapp stands, from its Deployment. */
export function phaseOf(app: MyappObject, dep: Deployment): "Pending" | "Running" | "Failed" {
  const failed = dep.status?.conditions?.some((c) =>
    (c.type === "Progressing" && c.status === "False") ||
    (c.type === "ReplicaFailure" && c.status === "True")
  );
  if (failed) return "Failed";
  return (dep.status?.readyReplicas ?? 0) === app.spec.replicas &&
      dep.status?.observedGeneration === dep.metadata.generation
    ? "Running"
    : "Pending";
}

/** Keeps each Myapp's Deployment in line with it and reports progress in its status. */
export const controller = reconcile(Myapp, {
  owns: [Deployment],
  // The seed's predicate: react to spec changes and to deletion, not to status or metadata
  // writes. Changes to the owned Deployment still cause a reconcile.
  primary: { predicates: [or(generationChanged, deletionStarted)] },
  finalizer: "apps.kubeno.dev/cleanup",
  async reconcile(app, ctx) {
    const dep = await ctx.apply(Deployment, deploymentFor(app));
    const phase = phaseOf(app, dep);
    const ready = dep.status?.readyReplicas ?? 0;
    const conditions: Condition[] = setCondition(app.status?.conditions, {
      type: "Ready",
      status: phase === "Running" ? "True" : "False",
      reason: phase === "Running"
        ? "DeploymentReady"
        : phase === "Failed"
        ? "DeploymentFailed"
        : "Progressing",
      message: `${ready}/${app.spec.replicas} replicas ready`,
      observedGeneration: app.metadata.generation,
    });
    // patchStatus sends nothing when the status already holds these values.
    await ctx.patchStatus(app, {
      phase,
      readyReplicas: ready,
      conditions,
      observedGeneration: app.metadata.generation,
    });
  },
  finalize(app, ctx) {
    // The Deployment is garbage-collected through its ownerReference; anything the
    // cluster does not own (DNS records, buckets, ...) would be released here.
    ctx.events.normal(app, "CleanedUp", `Released what ${ctx.key} held outside the cluster`);
    ctx.log.info("Cleaned up {key}", { key: ctx.key });
  },
});

/** Defaults missing fields and refuses more than {@linkcode MAX_REPLICAS} replicas. */
export const webhook = admission(Myapp, {
  default(app) {
    app.spec.port ??= 8080;
  },
  validate({ object }) {
    if (!object) return; // DELETE: nothing to check
    if (object.spec.replicas > MAX_REPLICAS) {
      return `spec.replicas: must be at most ${MAX_REPLICAS}, got ${object.spec.replicas}`;
    }
  },
});

/** The operator program: `run` (default), `install`, `uninstall`, `manifests`, `version`. */
export const myappOperator = operator({
  name: "myapp-operator",
  version: "0.1.0",
  image: "ghcr.io/kubeno/myapp-operator:0.1.0",
  controllers: [controller],
  webhooks: [webhook],
  leaderElection: { leaseName: "myapp-operator" },
  // The seed watches the namespace it runs in (the generated Deployment sets POD_NAMESPACE);
  // outside a cluster POD_NAMESPACE is unset and it watches all namespaces.
  watchNamespaces: [Deno.env.get("POD_NAMESPACE") ?? ""],
});

if (import.meta.main) await myappOperator.main();
