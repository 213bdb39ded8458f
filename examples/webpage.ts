/**
 * Java Operator SDK's WebPage sample, ported: a `WebPage` holds a page's html; the operator
 * serves it with nginx — a ConfigMap with the html, a Deployment mounting it, a Service, and
 * an Ingress only while `spec.exposed` is true. `status.areWeGood` is true once every
 * dependent is ready (a Deployment as `kubectl rollout status` judges it); a change of the
 * html rolls the pods (the html's hash is an annotation of the pod template). A page whose
 * html contains `error` fails, as the sample's error simulation does: its `errorMessage` says
 * why and the reconcile is retried with backoff, five times at most.
 *
 * ```sh
 * deno run -A examples/webpage.ts install     # apply the CRD
 * deno run -A examples/webpage.ts             # run the operator against the current kubeconfig
 * ```
 *
 * @module
 */
import {
  type ApplyObject,
  conditionsSchema,
  ConfigMap,
  defineResource,
  dependents,
  Deployment,
  Ingress,
  type ObjectOf,
  operator,
  reconcile,
  Service,
  z,
} from "../mod.ts";

/** A WebPage: html served by nginx, exposed through an Ingress when asked. */
export const WebPage = defineResource({
  group: "sample.kubeno.dev",
  version: "v1",
  kind: "WebPage",
  plural: "webpages",
  description: "WebPage serves a static html page with nginx",
  spec: z.object({
    html: z.string().describe("The page"),
    exposed: z.boolean().default(false).describe("Whether an Ingress exposes it"),
  }),
  status: z.object({
    htmlConfigMap: z.string().optional().describe("The ConfigMap holding the html"),
    areWeGood: z.boolean().optional().describe("Whether every dependent is ready"),
    errorMessage: z.string().optional().describe("Why the last reconcile failed"),
    observedGeneration: z.int().optional(),
    conditions: conditionsSchema,
  }),
  printerColumns: [
    { name: "Good", type: "boolean", jsonPath: ".status.areWeGood" },
    { name: "Exposed", type: "boolean", jsonPath: ".spec.exposed" },
  ],
});

/** A WebPage as the controller sees it. */
export type WebPageObject = ObjectOf<typeof WebPage>;

const labelsOf = (page: WebPageObject) => ({ app: page.metadata.name! });

/** The html's SHA-256, hex: a pod-template annotation, so that a new html rolls the pods. */
async function hashOf(html: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(html));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The dependents: ConfigMap → Deployment → Service, and the Ingress while exposed. */
export const children = dependents(WebPage, {
  config: {
    resource: ConfigMap,
    desired: (page): ApplyObject<ConfigMap> => ({
      metadata: { name: page.metadata.name! },
      data: { "index.html": page.spec.html },
    }),
  },
  deployment: {
    resource: Deployment,
    dependsOn: ["config"],
    desired: async (page): Promise<ApplyObject<Deployment>> => ({
      metadata: { name: page.metadata.name!, labels: labelsOf(page) },
      spec: {
        replicas: 1,
        selector: { matchLabels: labelsOf(page) },
        template: {
          metadata: {
            labels: labelsOf(page),
            annotations: { "sample.kubeno.dev/html-sha256": await hashOf(page.spec.html) },
          },
          spec: {
            containers: [{
              name: "nginx",
              image: "nginx:1.27",
              ports: [{ containerPort: 80 }],
              volumeMounts: [{ name: "html", mountPath: "/usr/share/nginx/html" }],
            }],
            volumes: [{ name: "html", configMap: { name: page.metadata.name! } }],
          },
        },
      },
    }),
  },
  service: {
    resource: Service,
    dependsOn: ["deployment"],
    desired: (page): ApplyObject<Service> => ({
      metadata: { name: page.metadata.name! },
      spec: { selector: labelsOf(page), ports: [{ port: 80, targetPort: 80 }] },
    }),
  },
  ingress: {
    resource: Ingress,
    dependsOn: ["service"],
    desired: (page): ApplyObject<Ingress> | undefined =>
      page.spec.exposed
        ? {
          metadata: { name: page.metadata.name! },
          spec: {
            rules: [{
              http: {
                paths: [{
                  path: "/",
                  pathType: "Prefix",
                  backend: { service: { name: page.metadata.name!, port: { number: 80 } } },
                }],
              },
            }],
          },
        }
        : undefined,
  },
});

/** Applies the dependents and says whether they are good; a failure's message goes to status. */
export const webPageController = reconcile(WebPage, {
  owns: [children],
  retry: { baseDelayMs: 500, maxDelayMs: 30_000, maxAttempts: 5 },
  async reconcile(page, ctx) {
    // The sample's error simulation.
    if (page.spec.html.includes("error")) throw new Error("Simulated error: the html says so");
    const result = await children.reconcile(page, ctx);
    await ctx.patchStatus(page, {
      htmlConfigMap: page.metadata.name!,
      areWeGood: result.ready,
      errorMessage: null, // a merge patch: null removes it
    });
    await ctx.setCondition(page, result.condition);
    if (result.error) throw result.error;
  },
  onError: (_page, error) => ({ areWeGood: false, errorMessage: `Error: ${firstLine(error)}` }),
});

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0];
}

/** The operator program. */
export const webPageOperator = operator({
  name: "webpage-operator",
  version: "0.1.0",
  image: "ghcr.io/kubeno/webpage-operator:0.1.0",
  controllers: [webPageController],
});

if (import.meta.main) await webPageOperator.main();
