/**
 * The Myapp operator's next release: its API grown from `v1alpha1` (`examples/myapp.ts`) to
 * `v1`, as kubebuilder's multi-version tutorial grows CronJob. `v1` is the hub — stored,
 * reconciled — and `v1alpha1` stays served, deprecated, converted to and from `v1` by the
 * two functions below, which the operator serves as the CRD's conversion webhook.
 *
 * What changed in `v1`: the single `port` became a list of named `ports`, and `nodeSelector`
 * is new. A `v1` object read at `v1alpha1` keeps what `v1alpha1` cannot show in the
 * `kubeno.dev/conversion-data` annotation, so `v1 → v1alpha1 → v1` loses nothing.
 *
 * The upgrade, on a cluster where `examples/myapp.ts` was installed and holds Myapps:
 *
 * ```sh
 * deno run -A examples/myapp_v1.ts install     # the CRD now serves v1 (stored) and v1alpha1
 * deno run -A examples/myapp_v1.ts             # run it: controllers, webhooks, conversion
 * kubectl get myapps.v1.apps.kubeno.dev        # every Myapp at v1, old ones converted
 * kubectl get myapps.v1alpha1.apps.kubeno.dev  # still served, with a deprecation warning
 * deno run -A examples/myapp_v1.ts migrate-storage  # rewrite old objects at v1, then
 *                                                   # status.storedVersions is [v1]
 * deno run -A examples/myapp_v1.ts manifests --helm chart  # a Helm chart of this release
 * ```
 *
 * @module
 */
import {
  admission,
  type ApplyObject,
  type Condition,
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
import { MAX_REPLICAS, Myapp as MyappV1alpha1, phaseOf } from "./myapp.ts";

export { MyappV1alpha1 };

const port = z.object({
  name: z.string().min(1).describe("Port name, unique in the list, e.g. http"),
  containerPort: z.int().min(1).max(65535).describe("Port the container listens on"),
});
type Port = { name: string; containerPort: number };

/** A Myapp at `v1`: run `image` as `replicas` pods, on the nodes `nodeSelector` picks. */
export const Myapp = defineResource({
  group: "apps.kubeno.dev",
  version: "v1",
  kind: "Myapp",
  plural: "myapps",
  shortNames: ["ma"],
  description: "Myapp runs a container image as a Deployment",
  spec: z.object({
    image: z.string().min(1).describe("Container image to run"),
    replicas: z.int().min(0).default(1).describe("Desired pods"),
    ports: listMap(z.array(port), ["name"]).optional().describe(
      "Container ports; defaulted to http: 8080",
    ),
    env: MyappV1alpha1.specSchema.shape.env,
    nodeSelector: z.record(z.string(), z.string()).optional().describe(
      "Labels a node must have to run the pods (new in v1)",
    ),
  }),
  status: MyappV1alpha1.statusSchema,
  // The version objects are stored at; the controller and the webhooks work at v1 (the hub)
  // whatever it is. Moving it is this one line, then `migrate-storage`.
  storage: "v1",
  printerColumns: [
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Ready", type: "integer", jsonPath: ".status.readyReplicas" },
    { name: "Replicas", type: "integer", jsonPath: ".spec.replicas" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  versions: [{
    resource: MyappV1alpha1,
    deprecated:
      "apps.kubeno.dev/v1alpha1 Myapp is deprecated; use apps.kubeno.dev/v1 (port is now ports)",
    // v1alpha1's port is the first of v1's ports; the other ports, the first one's name and
    // the nodeSelector come back from what the object last held at v1.
    toHub(old, restored) {
      const { port, ...spec } = old.spec;
      const rest = restored?.spec.ports?.slice(1) ?? [];
      const first: Port[] = port === undefined
        ? []
        : [{ name: restored?.spec.ports?.[0]?.name ?? "http", containerPort: port }];
      const ports = [...first, ...rest];
      return {
        spec: {
          ...spec,
          ...(ports.length ? { ports } : {}),
          ...(restored?.spec.nodeSelector ? { nodeSelector: restored.spec.nodeSelector } : {}),
        },
        ...(old.status ? { status: old.status } : {}),
      };
    },
    fromHub(app) {
      const { ports, nodeSelector: _, ...spec } = app.spec;
      const port = ports?.[0]?.containerPort;
      return {
        spec: { ...spec, ...(port === undefined ? {} : { port }) },
        ...(app.status ? { status: app.status } : {}),
      };
    },
  }],
});

/** A Myapp object at `v1`, as the controller sees it. */
export type MyappObject = ObjectOf<typeof Myapp>;

/** The Deployment a Myapp wants: same name and namespace, one container. */
export function deploymentFor(app: MyappObject): ApplyObject<Deployment> {
  const labels = {
    "app.kubernetes.io/name": "myapp",
    "app.kubernetes.io/instance": app.metadata.name!,
  };
  const { image, replicas, ports, env, nodeSelector } = app.spec;
  return {
    metadata: { name: app.metadata.name!, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          ...(nodeSelector ? { nodeSelector } : {}),
          containers: [{
            name: "app",
            image,
            ...(ports?.length ? { ports: ports.map((p) => ({ ...p })) } : {}),
            ...(env?.length ? { env } : {}),
          }],
        },
      },
    },
  };
}

/** Keeps each Myapp's Deployment in line with it and reports progress in its status. */
export const controller = reconcile(Myapp, {
  owns: [Deployment],
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
    await ctx.patchStatus(app, {
      phase,
      readyReplicas: ready,
      conditions,
      observedGeneration: app.metadata.generation,
    });
  },
  finalize(app, ctx) {
    ctx.events.normal(app, "CleanedUp", `Released what ${ctx.key} held outside the cluster`);
  },
});

/** Defaults the ports and refuses more than {@linkcode MAX_REPLICAS} replicas, at any version. */
export const webhook = admission(Myapp, {
  default(app) {
    app.spec.ports ??= [{ name: "http", containerPort: 8080 }];
  },
  validate({ object }) {
    if (!object) return;
    if (object.spec.replicas > MAX_REPLICAS) {
      return `spec.replicas: must be at most ${MAX_REPLICAS}, got ${object.spec.replicas}`;
    }
  },
});

/** The operator program, release 0.2.0: `run`, `install`, `migrate-storage`, `chart`, ... */
export const myappOperator = operator({
  name: "myapp-operator",
  version: "0.2.0",
  image: "ghcr.io/kubeno/myapp-operator:0.2.0",
  controllers: [controller],
  webhooks: [webhook],
  leaderElection: { leaseName: "myapp-operator" },
  watchNamespaces: [Deno.env.get("POD_NAMESPACE") ?? ""],
});

if (import.meta.main) await myappOperator.main();
