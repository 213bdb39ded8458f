import { deepStrictEqual, ok, strictEqual, throws } from "node:assert";
import { z } from "zod";
import type { ObjectMeta } from "../core/object.ts";
import { type ObjectOf, type Resource, resource } from "../core/resource.ts";
import {
  type CustomResource,
  defineResource,
  type ResourceObject,
  ResourceValidationError,
} from "./define_resource.ts";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
const assertType = <T extends true>(_: T) => {};

const spec = z.object({
  image: z.string().describe("Container image to run"),
  replicas: z.int().min(0).default(1).describe("Desired pods"),
});
const status = z.object({
  phase: z.enum(["Pending", "Running", "Failed"]).optional(),
  replicas: z.int().optional(),
});
const base = {
  group: "apps.kubeno.dev",
  version: "v1alpha1",
  kind: "Myapp",
  spec,
  status,
} as const;
const Myapp = defineResource({
  ...base,
  shortNames: ["ma"],
  categories: ["all"],
  printerColumns: [{ name: "Phase", jsonPath: ".status.phase", type: "string" }],
  validations: [{ rule: "self.replicas <= 10", message: "at most 10 replicas" }],
  scale: true,
  description: "A sample app",
});

Deno.test("defineResource() returns a Resource with inferred object types", () => {
  type App = ObjectOf<typeof Myapp>;
  assertType<Equal<App["spec"], { image: string; replicas: number }>>(true);
  assertType<
    Equal<
      App["status"],
      { phase?: "Pending" | "Running" | "Failed"; replicas?: number } | undefined
    >
  >(true);
  assertType<Equal<App["metadata"], ObjectMeta>>(true);
  assertType<
    Equal<App, ResourceObject<{ image: string; replicas: number }, z.output<typeof status>>>
  >(true);
  const r: Resource<App> = Myapp;
  const app: App = { metadata: { name: "a" }, spec: { image: "x", replicas: 1 } };
  // @ts-expect-error replicas is a number
  app.spec.replicas = "1";
  // @ts-expect-error phase is an enum
  app.status = { phase: "Unknown" };
  const emptySpec = z.object({});
  const NoStatus = defineResource({ group: "a.b", version: "v1", kind: "Thing", spec: emptySpec });
  assertType<Equal<ObjectOf<typeof NoStatus>["status"], undefined>>(true);
  assertType<Equal<typeof NoStatus, CustomResource<typeof emptySpec, undefined>>>(
    true,
  );
  const _neverCalled = () =>
    // @ts-expect-error spec is required
    defineResource({ group: "a.b", version: "v1", kind: "Thing" });
  strictEqual(r.plural, "myapps");
  deepStrictEqual(
    [
      Myapp.group,
      Myapp.version,
      Myapp.kind,
      Myapp.apiVersion,
      Myapp.namespaced,
      Myapp.singular,
      Myapp.listKind,
    ],
    [
      "apps.kubeno.dev",
      "v1alpha1",
      "Myapp",
      "apps.kubeno.dev/v1alpha1",
      true,
      "myapp",
      "MyappList",
    ],
  );
  ok(Object.isFrozen(Myapp));
  strictEqual(Myapp.specSchema, spec);
  strictEqual(Myapp.statusSchema, status);
  // Interchangeable with resource() for the same kind.
  const same = resource<App>({ group: Myapp.group, version: Myapp.version, kind: Myapp.kind });
  strictEqual(same.apiVersion, Myapp.apiVersion);
});

Deno.test("crd() builds the full CustomResourceDefinition", () => {
  const crd = Myapp.crd();
  deepStrictEqual(crd, {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "myapps.apps.kubeno.dev" },
    spec: {
      group: "apps.kubeno.dev",
      names: {
        plural: "myapps",
        singular: "myapp",
        kind: "Myapp",
        listKind: "MyappList",
        shortNames: ["ma"],
        categories: ["all"],
      },
      scope: "Namespaced",
      versions: [{
        name: "v1alpha1",
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            description: "A sample app",
            type: "object",
            properties: {
              apiVersion: {
                type: "string",
                description:
                  "APIVersion defines the versioned schema of this representation of an object.",
              },
              kind: {
                type: "string",
                description:
                  "Kind is a string value representing the REST resource this object represents.",
              },
              metadata: { type: "object" },
              spec: {
                type: "object",
                description: "Desired state of Myapp",
                properties: {
                  image: { type: "string", description: "Container image to run" },
                  replicas: {
                    type: "integer",
                    format: "int64",
                    minimum: 0,
                    default: 1,
                    description: "Desired pods",
                  },
                },
                required: ["image"],
                "x-kubernetes-validations": [{
                  rule: "self.replicas <= 10",
                  message: "at most 10 replicas",
                }],
              },
              status: {
                type: "object",
                description: "Observed state of Myapp",
                properties: {
                  phase: { type: "string", enum: ["Pending", "Running", "Failed"] },
                  replicas: { type: "integer", format: "int64" },
                },
              },
            },
            required: ["spec"],
          },
        },
        subresources: {
          status: {},
          scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas" },
        },
        additionalPrinterColumns: [{ name: "Phase", jsonPath: ".status.phase", type: "string" }],
      }],
    },
  });
  // Each call is a fresh copy.
  crd.spec.group = "changed";
  strictEqual(Myapp.crd().spec.group, "apps.kubeno.dev");
});

Deno.test("crd() defaults an all-optional spec to {} and honours names and scope", () => {
  const Cfg = defineResource({
    group: "config.example.com",
    version: "v2beta3",
    kind: "Policy",
    scope: "Cluster",
    listKind: "PolicyCollection",
    singular: "pol",
    spec: z.object({ level: z.int().default(3) }),
  });
  strictEqual(Cfg.namespaced, false);
  strictEqual(Cfg.plural, "policies");
  const crd = Cfg.crd();
  strictEqual(crd.metadata.name, "policies.config.example.com");
  strictEqual(crd.spec.scope, "Cluster");
  deepStrictEqual(crd.spec.names, {
    plural: "policies",
    singular: "pol",
    kind: "Policy",
    listKind: "PolicyCollection",
  });
  const root = crd.spec.versions[0].schema.openAPIV3Schema;
  strictEqual(root.required, undefined);
  deepStrictEqual(root.properties!.spec.default, {});
  strictEqual(crd.spec.versions[0].subresources, undefined);
  deepStrictEqual(Cfg.parse({ metadata: { name: "p" } }).spec, { level: 3 });
});

Deno.test("defineResource() rejects bad names, columns and scale paths with TypeErrors", () => {
  const bad = (over: Record<string, unknown>, message: RegExp) =>
    throws(() => defineResource({ ...base, ...over } as typeof base), (e: unknown) => {
      ok(e instanceof TypeError, String(e));
      ok(message.test(e.message), e.message);
      return true;
    });
  bad(
    { group: "example" },
    /Cannot define resource "Myapp": group "example" must be a DNS-1123 subdomain with at least one dot/,
  );
  bad({ group: "Apps.example.com" }, /DNS-1123 subdomain/);
  bad({ version: "1" }, /version "1" must look like "v1", "v1alpha1" or "v2beta3"/);
  bad({ version: "v1gamma1" }, /version "v1gamma1"/);
  bad({ kind: "myapp" }, /Cannot define resource "myapp": kind must be UpperCamelCase/);
  bad({ kind: "My-app" }, /kind must be UpperCamelCase/);
  bad({ plural: "My_apps" }, /plural "My_apps" must be a lower-case DNS-1035 label/);
  bad({ shortNames: ["M"] }, /short name "M"/);
  bad({ categories: ["a b"] }, /category "a b"/);
  bad({ listKind: "Myapp" }, /listKind "Myapp" must differ/);
  bad({ scope: "Global" }, /scope "Global" must be "Namespaced" or "Cluster"/);
  bad({ spec: z.string() }, /spec must be a z\.object\(\)/);
  bad(
    { spec: z.object({ when: z.date() }) },
    /Cannot generate CRD schema for Myapp at spec\.when: z\.date\(\)/,
  );
  bad(
    { status: z.object({ t: z.string().transform(Number) }) },
    /for Myapp at status\.t: z\.transform/,
  );
  bad(
    { printerColumns: [{ name: "Phase", jsonPath: ".status.phse", type: "string" }] },
    /printer column "Phase" has jsonPath ".status.phse", which names no field of the schema/,
  );
  bad(
    { printerColumns: [{ name: "X", jsonPath: "status.phase", type: "string" }] },
    /must start with "."/,
  );
  bad({ printerColumns: [{ name: "X", jsonPath: ".spec.image", type: "text" }] }, /type "text"/);
  bad(
    { printerColumns: [{ name: "X", jsonPath: ".spec.image", type: "string", priority: -1 }] },
    /priority -1/,
  );
  bad({ scale: true, status: undefined }, /the scale subresource needs a status schema/);
  bad(
    { scale: { specReplicasPath: ".spec.image" } },
    /must name a field of type integer, not string/,
  );
  bad({ scale: { statusReplicasPath: ".spec.replicas" } }, /must be under .status/);
  bad({ scale: { labelSelectorPath: ".status.selector" } }, /names no field/);
  // Columns into maps, preserved fields, metadata and filtered lists are accepted.
  defineResource({
    ...base,
    spec: z.object({ labels: z.record(z.string(), z.string()), raw: z.unknown() }),
    status: z.object({ conditions: z.array(z.object({ type: z.string(), status: z.string() })) }),
    printerColumns: [
      { name: "App", jsonPath: ".spec.labels.app", type: "string" },
      { name: "Raw", jsonPath: ".spec.raw.x", type: "string" },
      { name: "Age", jsonPath: ".metadata.creationTimestamp", type: "date" },
      { name: "Ready", jsonPath: '.status.conditions[?(@.type=="Ready")].status', type: "string" },
    ],
  });
});

Deno.test("parse() and safeParse() validate with the zod schemas and name the field", () => {
  const app = Myapp.parse({
    apiVersion: "apps.kubeno.dev/v1alpha1",
    kind: "Myapp",
    metadata: { name: "a", namespace: "ns", uid: "u1" },
    spec: { image: "nginx" },
    status: { phase: "Running" },
  });
  deepStrictEqual(app.spec, { image: "nginx", replicas: 1 });
  strictEqual(app.metadata.uid, "u1");
  strictEqual(app.status?.phase, "Running");

  const bad = Myapp.safeParse({
    metadata: { name: "a", namespace: "ns" },
    spec: { image: 1, replicas: -1 },
  });
  ok(!bad.success);
  ok(bad.error instanceof ResourceValidationError);
  deepStrictEqual(bad.error.issues.map((i) => i.path), ["spec.image", "spec.replicas"]);
  ok(bad.error.message.startsWith('Invalid Myapp "ns/a": spec.image: '), bad.error.message);
  ok(bad.error.cause instanceof z.ZodError);

  throws(
    () => Myapp.parse({ kind: "Other", metadata: {}, spec: { image: "x" } }),
    /Invalid Myapp: kind: /,
  );
  throws(() => Myapp.parse({ spec: { image: "x" } }), /metadata: /);
  throws(() => Myapp.parse(null), ResourceValidationError);
  const list = defineResource({
    ...base,
    spec: z.object({ ports: z.array(z.object({ port: z.int() })) }),
  }).safeParse({ metadata: {}, spec: { ports: [{ port: 1 }, { port: "x" }] } });
  ok(!list.success);
  strictEqual(list.error.issues[0].path, "spec.ports[1].port");
});

Deno.test("storage is its own setting: a spoke can be stored while the hub is reconciled", () => {
  const V1alpha1 = defineResource({
    group: "example.com",
    version: "v1alpha1",
    kind: "Widget",
    spec: z.object({ size: z.string() }),
  });
  const make = (storage?: string) =>
    defineResource({
      group: "example.com",
      version: "v1",
      kind: "Widget",
      spec: z.object({ size: z.int() }),
      ...(storage ? { storage } : {}),
      versions: [{
        resource: V1alpha1,
        toHub: (o) => ({ spec: { size: Number(o.spec.size) } }),
        fromHub: (w) => ({ spec: { size: String(w.spec.size) } }),
      }],
    });
  const stored = (r: ReturnType<typeof make>) =>
    r.crd().spec.versions.filter((v) => v.storage).map((v) => v.name);
  deepStrictEqual(stored(make()), ["v1"]);
  strictEqual(make().storageVersion, "v1");
  deepStrictEqual(stored(make("v1alpha1")), ["v1alpha1"]);
  strictEqual(make("v1alpha1").storageVersion, "v1alpha1");
  strictEqual(make("v1alpha1").version, "v1");
  throws(
    () => make("v2"),
    /Cannot define resource "Widget": storage "v2" is not one of its versions \(v1, v1alpha1\)/,
  );
});
