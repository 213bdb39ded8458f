/**
 * A web application as a graph of dependents: a `Webapp` gets a ConfigMap, then a Deployment
 * that mounts it, then a Service once the Deployment's pods are ready, then an Ingress once the
 * Service has endpoints — the Ingress only while `spec.host` is set. Removing `spec.host`
 * prunes the Ingress; deleting the Webapp deletes Ingress, Service, Deployment and ConfigMap
 * in that order before its finalizer is removed. Its status carries each dependent's state
 * and a `Ready` condition naming the first one not ready.
 *
 * ```sh
 * deno run -A examples/webapp.ts install     # apply the CRD
 * deno run -A examples/webapp.ts             # run the operator against the current kubeconfig
 * ```
 *
 * @module
 */
import {
  type ApplyObject,
  conditionsSchema,
  ConfigMap,
  defineResource,
  Deployment,
  type ObjectOf,
  operator,
  reconcile,
  Service,
  z,
} from "../mod.ts";
import { Ingress } from "../core.ts";
import { dependents } from "../runtime/dependents.ts";

/** A Webapp: `image` behind a Service, reachable at `host` through an Ingress when set. */
export const Webapp = defineResource({
  group: "apps.kubeno.dev",
  version: "v1alpha1",
  kind: "Webapp",
  plural: "webapps",
  description: "Webapp runs a web server with its configuration, Service and Ingress",
  spec: z.object({
    image: z.string().min(1).describe("Container image to run"),
    replicas: z.int().min(0).default(1).describe("Desired pods"),
    greeting: z.string().default("hello").describe("Served from the ConfigMap"),
    host: z.string().optional().describe("Host name of the Ingress; none without it"),
  }),
  status: z.object({
    dependents: z.record(z.string(), z.string()).optional().describe(
      "Each dependent's state: ready, notReady, waiting, absent, pruned or failed",
    ),
    conditions: conditionsSchema,
  }),
  printerColumns: [
    { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: "Host", type: "string", jsonPath: ".spec.host" },
  ],
});

/** A Webapp object as the controller sees it. */
export type WebappObject = ObjectOf<typeof Webapp>;

const labelsOf = (app: WebappObject) => ({
  "app.kubernetes.io/name": "webapp",
  "app.kubernetes.io/instance": app.metadata.name!,
});

/** The ConfigMap: what the pods serve. */
export function configFor(app: WebappObject): ApplyObject<ConfigMap> {
  return {
    metadata: { name: `${app.metadata.name}-config` },
    data: { "index.html": `<h1>${app.spec.greeting}</h1>\n` },
  };
}

/** The Deployment: `replicas` pods mounting the ConfigMap. */
export function deploymentFor(app: WebappObject): ApplyObject<Deployment> {
  const labels = labelsOf(app);
  return {
    metadata: { name: app.metadata.name!, labels },
    spec: {
      replicas: app.spec.replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [{
            name: "web",
            image: app.spec.image,
            ports: [{ name: "http", containerPort: 8080 }],
            volumeMounts: [{ name: "content", mountPath: "/srv" }],
          }],
          volumes: [{ name: "content", configMap: { name: `${app.metadata.name}-config` } }],
        },
      },
    },
  };
}

/** The Service in front of the pods. */
export function serviceFor(app: WebappObject): ApplyObject<Service> {
  return {
    metadata: { name: app.metadata.name! },
    spec: {
      selector: labelsOf(app),
      ports: [{ name: "http", port: 80, targetPort: "http" }],
    },
  };
}

/** The Ingress, only while `spec.host` is set. */
export function ingressFor(app: WebappObject): ApplyObject<Ingress> | undefined {
  if (!app.spec.host) return undefined;
  return {
    metadata: { name: app.metadata.name! },
    spec: {
      rules: [{
        host: app.spec.host,
        http: {
          paths: [{
            path: "/",
            pathType: "Prefix",
            backend: { service: { name: app.metadata.name!, port: { name: "http" } } },
          }],
        },
      }],
    },
  };
}

/** ConfigMap → Deployment → Service → Ingress, each waiting for the one before to be ready. */
export const children = dependents(Webapp, {
  config: { resource: ConfigMap, desired: configFor },
  deployment: { resource: Deployment, dependsOn: ["config"], desired: deploymentFor },
  service: { resource: Service, dependsOn: ["deployment"], desired: serviceFor },
  ingress: { resource: Ingress, dependsOn: ["service"], desired: ingressFor },
});

/** Applies the graph, reports it in the status, deletes it in order. */
export const controller = reconcile(Webapp, {
  owns: [children],
  finalizer: "apps.kubeno.dev/ordered-deletion",
  async reconcile(app, ctx) {
    const result = await children.reconcile(app, ctx);
    const states = Object.fromEntries(
      Object.values(result.dependents).map((r) => [r.name, r.state]),
    );
    // One status write, when the reconcile returns: skipped when it holds these values.
    const patched = await ctx.patchStatus(app, { dependents: states });
    await ctx.setCondition(patched, result.condition);
    if (result.error) throw result.error; // retried with backoff
    // Nothing to requeue: a dependent's status change is an owned event, which reconciles.
  },
  finalize: (app, ctx) => children.delete(app, ctx),
});

/** The operator program. */
export const webappOperator = operator({
  name: "webapp-operator",
  version: "0.1.0",
  image: "ghcr.io/kubeno/webapp-operator:0.1.0",
  controllers: [controller],
});

if (import.meta.main) await webappOperator.main();
