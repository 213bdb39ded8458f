import { deepStrictEqual, ok, strictEqual, throws } from "node:assert";
import { z } from "zod";
import type { KubeObject } from "../core/object.ts";
import { resource } from "../core/resource.ts";
import { defineResource } from "./define_resource.ts";
import { CONVERSION_DATA_ANNOTATION, ConversionError } from "./conversion.ts";

const group = "example.com";
const names = { group, kind: "Widget", plural: "widgets" } as const;

// v1alpha1: size as text. v1beta1: size as a number, no color. v1 (hub): size, color (new).
const V1alpha1 = defineResource({
  ...names,
  version: "v1alpha1",
  spec: z.object({ size: z.string() }),
  status: z.object({ ready: z.boolean().optional() }),
});
const V1beta1 = defineResource({
  ...names,
  version: "v1beta1",
  spec: z.object({ size: z.int() }),
});
const Widget = defineResource({
  ...names,
  version: "v1",
  spec: z.object({ size: z.int(), color: z.string().optional() }),
  status: z.object({ ready: z.boolean().optional() }),
  printerColumns: [{ name: "Size", type: "integer", jsonPath: ".spec.size" }],
  versions: [
    {
      resource: V1alpha1,
      deprecated: "example.com/v1alpha1 Widget is deprecated; use example.com/v1",
      toHub: (old, restored) => ({
        spec: {
          size: Number(old.spec.size),
          ...(restored?.spec.color ? { color: restored.spec.color } : {}),
        },
        ...(old.status ? { status: old.status } : {}),
      }),
      fromHub: (w) => ({
        spec: { size: String(w.spec.size) },
        ...(w.status ? { status: w.status } : {}),
      }),
    },
    {
      resource: V1beta1,
      served: false,
      toHub: (old, restored) => ({
        spec: {
          size: old.spec.size,
          ...(restored?.spec.color ? { color: restored.spec.color } : {}),
        },
        // v1beta1 has no status: it comes back from the hub's data.
        ...(restored?.status ? { status: restored.status } : {}),
      }),
      fromHub: (w) => ({ spec: { size: w.spec.size } }),
    },
  ],
});

const hub = (spec: { size: number; color?: string }): KubeObject & Record<string, unknown> => ({
  apiVersion: "example.com/v1",
  kind: "Widget",
  metadata: { name: "w", namespace: "default", uid: "u1", resourceVersion: "7" },
  spec,
  status: { ready: true },
});

Deno.test("the CRD lists every version by priority, stores the hub and names a webhook", () => {
  const crd = Widget.crd();
  deepStrictEqual(
    crd.spec.versions.map((v) => [v.name, v.served, v.storage, v.deprecated ?? false]),
    [["v1", true, true, false], ["v1beta1", false, false, false], [
      "v1alpha1",
      true,
      false,
      true,
    ]],
  );
  strictEqual(
    crd.spec.versions[2].deprecationWarning,
    "example.com/v1alpha1 Widget is deprecated; use example.com/v1",
  );
  // Each version keeps its own schema and columns.
  strictEqual(
    crd.spec.versions[2].schema.openAPIV3Schema.properties?.spec.properties?.size.type,
    "string",
  );
  strictEqual(crd.spec.versions[0].additionalPrinterColumns?.[0].name, "Size");
  strictEqual(crd.spec.versions[2].additionalPrinterColumns, undefined);
  deepStrictEqual(crd.spec.conversion, {
    strategy: "Webhook",
    webhook: {
      conversionReviewVersions: ["v1"],
      clientConfig: {
        service: { namespace: "system", name: "webhook-service", path: "/convert", port: 443 },
      },
    },
  });
  deepStrictEqual(Widget.versions, ["v1", "v1alpha1", "v1beta1"]);
  strictEqual(V1alpha1.crd().spec.conversion, undefined);
});

Deno.test("round trips through a spoke are lossless; the annotation appears only when needed", () => {
  // Nothing lost: no annotation, metadata the server owns is untouched.
  const plain = Widget.convert(hub({ size: 3 }), V1alpha1);
  deepStrictEqual(plain, {
    apiVersion: "example.com/v1alpha1",
    kind: "Widget",
    metadata: { name: "w", namespace: "default", uid: "u1", resourceVersion: "7" },
    spec: { size: "3" },
    status: { ready: true },
  });
  deepStrictEqual(Widget.convert(plain, Widget), hub({ size: 3 }));

  // color has no place in v1alpha1: kept in the annotation, restored on the way back.
  const old = Widget.convert(hub({ size: 3, color: "red" }), V1alpha1);
  deepStrictEqual(old.spec, { size: "3" });
  deepStrictEqual(JSON.parse(old.metadata.annotations![CONVERSION_DATA_ANNOTATION]), {
    apiVersion: "example.com/v1",
    spec: { size: 3, color: "red" },
    status: { ready: true },
  });
  deepStrictEqual(Widget.convert(old, Widget), hub({ size: 3, color: "red" }));

  // Edited at v1alpha1: the edit wins, color survives, the annotation never reaches the hub.
  const edited = structuredClone(old);
  edited.spec.size = "5";
  const back = Widget.convert(edited, "v1");
  deepStrictEqual(back, hub({ size: 5, color: "red" }));
  strictEqual(back.metadata.annotations, undefined);

  // Spoke to spoke goes through the hub and keeps the data too.
  const beta = Widget.convert(old, V1beta1);
  deepStrictEqual(beta.spec, { size: 3 });
  deepStrictEqual(Widget.convert(beta, Widget), hub({ size: 3, color: "red" }));

  // Data from an older hub (or garbage) is ignored, not trusted.
  const stale = structuredClone(old);
  stale.metadata.annotations![CONVERSION_DATA_ANNOTATION] = '{"apiVersion":"example.com/v0"}';
  deepStrictEqual(Widget.convert(stale, Widget).spec, { size: 3 });
  stale.metadata.annotations![CONVERSION_DATA_ANNOTATION] = "{not json";
  deepStrictEqual(Widget.convert(stale, Widget).spec, { size: 3 });
});

Deno.test("labels and annotations of a conversion result count, other metadata does not", () => {
  const Labelled = defineResource({
    ...names,
    version: "v1",
    spec: z.object({ size: z.int() }),
    versions: [{
      resource: V1beta1,
      toHub: (old) => ({
        metadata: { labels: { ...old.metadata.labels, size: String(old.spec.size) }, uid: "x" },
        spec: old.spec,
      }),
      fromHub: (w) => ({ metadata: { name: "renamed" }, spec: w.spec }),
    }],
  });
  const old = {
    apiVersion: "example.com/v1beta1",
    kind: "Widget",
    metadata: { name: "w", uid: "u1", labels: { team: "a" }, annotations: { a: "1" } },
    spec: { size: 2 },
  };
  const w = Labelled.convert(old, Labelled);
  deepStrictEqual(w.metadata, { name: "w", uid: "u1", labels: { team: "a", size: "2" } });
  // A returned metadata without labels or annotations clears them; name stays the source's.
  deepStrictEqual(Labelled.convert(w, V1beta1).metadata.name, "w");
  deepStrictEqual(Labelled.convert(w, V1beta1).metadata.labels, undefined);
});

Deno.test("conversions fail with a ConversionError naming the object and the versions", () => {
  const fails = (obj: unknown, to: string, pattern: RegExp) =>
    throws(() => Widget.convert(obj as KubeObject, to), (e: unknown) => {
      ok(e instanceof ConversionError, String(e));
      ok(pattern.test(e.message), e.message);
      return true;
    });
  fails(
    hub({ size: 1 }),
    "example.com/v2",
    /Widget "default\/w": the desired apiVersion "example.com\/v2" is not one of example.com\/v1, example.com\/v1alpha1, example.com\/v1beta1/,
  );
  fails(hub({ size: 1 }), "other.io/v1", /desired apiVersion "other.io\/v1"/);
  fails(
    { ...hub({ size: 1 }), apiVersion: "example.com/v9" },
    "v1",
    /its apiVersion "example.com\/v9"/,
  );
  fails({ ...hub({ size: 1 }), kind: "Gadget" }, "v1alpha1", /its kind "Gadget" is not "Widget"/);
  fails(
    { apiVersion: "example.com/v1" },
    "v1alpha1",
    /Cannot convert a Widget: the object has no metadata/,
  );
  fails(null, "v1alpha1", /the object has no metadata/);

  const Broken = defineResource({
    ...names,
    version: "v1",
    spec: z.object({ size: z.int() }),
    versions: [{
      resource: V1beta1,
      toHub: () => {
        throw new RangeError("size out of range");
      },
      fromHub: () => 42 as never,
    }],
  });
  throws(
    () => Broken.convert({ ...hub({ size: 1 }), apiVersion: "example.com/v1beta1" }, "v1"),
    (e: unknown) => {
      ok(e instanceof ConversionError);
      strictEqual(
        e.message,
        'Cannot convert Widget "default/w" from example.com/v1beta1 to example.com/v1: size out of range',
      );
      strictEqual(e.object, "default/w");
      ok(e.cause instanceof RangeError);
      return true;
    },
  );
  throws(
    () => Broken.convert(hub({ size: 1 }), "v1beta1"),
    /from example.com\/v1 to example.com\/v1beta1: the conversion function returned 42, not an object/,
  );
});

Deno.test("defineResource refuses versions that are not the hub's resource's versions", () => {
  const spec = z.object({ size: z.int() });
  const hubWith = (r: unknown) => () =>
    defineResource({
      ...names,
      version: "v1",
      spec,
      versions: [{ resource: r as typeof V1beta1, toHub: (o) => o, fromHub: (w) => w }],
    });
  throws(
    hubWith(defineResource({ ...names, plural: "gizmos", version: "v1beta1", spec })),
    /version "v1beta1" must have the hub's group, kind, plural and scope \(example.com, Widget, widgets, Namespaced\), not \(example.com, Widget, gizmos, Namespaced\)/,
  );
  throws(
    hubWith(defineResource({ ...names, version: "v1", spec })),
    /version "v1" is declared twice/,
  );
  throws(
    hubWith(resource({ group, version: "v1beta1", kind: "Widget" })),
    /each entry of versions needs the resource of its version, from defineResource; got example.com\/v1beta1/,
  );
  throws(hubWith(Widget), /lists versions of its own; list every version on the hub/);
});

Deno.test("conversion functions are typed by both versions", () => {
  defineResource({
    ...names,
    version: "v1",
    spec: z.object({ size: z.int() }),
    versions: [{
      resource: V1alpha1,
      // @ts-expect-error size is a number at the hub
      toHub: (old) => ({ spec: { size: old.spec.size } }),
      // @ts-expect-error the hub has no spec.label
      fromHub: (w) => ({ spec: { size: w.spec.label } }),
    }],
  });
});
