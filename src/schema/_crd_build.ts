/**
 * Private: checks a custom resource's names and assembles its CustomResourceDefinition.
 *
 * @module
 */
import { isDns1035Label, isDnsSubdomain } from "../util/names.ts";
import type {
  CustomResourceDefinitionNames,
  PrinterColumn,
  ScaleSubresource,
} from "../core/crd.ts";
import type { CustomResourceDefinition } from "../core/kinds_cluster.ts";
import type { JSONSchemaProps, ValidationRule } from "../core/crd.ts";
import { toRules } from "./_schema_walk.ts";
import type { Resource } from "../core/resource.ts";

const VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;
const COLUMN_TYPES = ["string", "integer", "number", "boolean", "date"];
const COLUMN_FORMATS = [
  "int32",
  "int64",
  "float",
  "double",
  "byte",
  "date",
  "date-time",
  "password",
];
/** Metadata fields a printer column may show. */
const METADATA_FIELDS = [
  "name",
  "generateName",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
];

/**
 * Checks group, version and names against the rules the API server enforces.
 *
 * @throws {TypeError} Naming the broken rule and the value.
 */
export function checkNames(
  group: string,
  version: string,
  names: CustomResourceDefinitionNames,
  scope: string,
): void {
  const fail = (why: string): never => {
    throw new TypeError(`Cannot define resource "${names.kind}": ${why}`);
  };
  if (!KIND.test(names.kind)) {
    fail('kind must be UpperCamelCase letters and digits, like "Myapp"');
  }
  if (!group.includes(".") || !isDnsSubdomain(group)) {
    fail(
      `group "${group}" must be a DNS-1123 subdomain with at least one dot, like "apps.example.com"`,
    );
  }
  if (!VERSION.test(version)) {
    fail(`version "${version}" must look like "v1", "v1alpha1" or "v2beta3"`);
  }
  if (!KIND.test(names.listKind)) fail(`listKind "${names.listKind}" must be UpperCamelCase`);
  if (names.listKind === names.kind) fail(`listKind "${names.listKind}" must differ from the kind`);
  const label = (what: string, value: string) => {
    if (!isDns1035Label(value)) {
      fail(
        `${what} "${value}" must be a lower-case DNS-1035 label (letters, digits, "-"), like "myapps"`,
      );
    }
  };
  label("plural", names.plural);
  label("singular", names.singular);
  for (const s of names.shortNames ?? []) label("short name", s);
  for (const c of names.categories ?? []) label("category", c);
  if (`${names.plural}.${group}`.length > 253) {
    fail(`the CRD name "${names.plural}.${group}" is longer than 253 characters`);
  }
  if (scope !== "Namespaced" && scope !== "Cluster") {
    fail(`scope "${scope}" must be "Namespaced" or "Cluster"`);
  }
}

/**
 * Finds the schema a simple JSON path (`.spec.a.b`) names; `undefined` when it names no
 * field, `null` when it leads into a map or preserved fields, where any key may exist.
 */
function resolve(root: JSONSchemaProps, jsonPath: string): JSONSchemaProps | null | undefined {
  // Only the plain leading segments are checked; filters like [?(@.type=="Ready")] are the server's.
  const plain = jsonPath.split("[")[0];
  const segments = plain.split(".").slice(1);
  if (segments[0] === "metadata") {
    return segments.length === 1 || METADATA_FIELDS.includes(segments[1]) ? null : undefined;
  }
  let s: JSONSchemaProps | undefined = root;
  for (const seg of segments) {
    if (!s) return undefined;
    if (s.properties?.[seg]) s = s.properties[seg];
    else if (
      typeof s.additionalProperties === "object" || s["x-kubernetes-preserve-unknown-fields"]
    ) {
      return null;
    } else return undefined;
  }
  return s;
}

function checkColumns(
  root: JSONSchemaProps,
  columns: PrinterColumn[],
  fail: (why: string) => never,
) {
  const seen = new Set<string>();
  for (const c of columns) {
    if (!c.name) fail("a printer column has an empty name");
    if (seen.has(c.name)) fail(`printer column "${c.name}" is declared twice`);
    seen.add(c.name);
    if (!COLUMN_TYPES.includes(c.type)) {
      fail(
        `printer column "${c.name}" has type "${c.type}"; use one of ${COLUMN_TYPES.join(", ")}`,
      );
    }
    if (c.format !== undefined && !COLUMN_FORMATS.includes(c.format)) {
      fail(
        `printer column "${c.name}" has format "${c.format}"; use one of ${
          COLUMN_FORMATS.join(", ")
        }`,
      );
    }
    if (c.priority !== undefined && !(Number.isInteger(c.priority) && c.priority >= 0)) {
      fail(`printer column "${c.name}" has priority ${c.priority}; use an integer >= 0`);
    }
    if (!c.jsonPath.startsWith(".")) {
      fail(`printer column "${c.name}" has jsonPath "${c.jsonPath}"; it must start with "."`);
    }
    if (resolve(root, c.jsonPath) === undefined) {
      fail(
        `printer column "${c.name}" has jsonPath "${c.jsonPath}", which names no field of the schema`,
      );
    }
  }
}

function checkScale(
  root: JSONSchemaProps,
  scale: ScaleSubresource,
  hasStatus: boolean,
  fail: (why: string) => never,
) {
  if (!hasStatus) fail("the scale subresource needs a status schema");
  const field = (what: string, path: string, under: string[], type: string) => {
    if (!under.some((u) => path.startsWith(`${u}.`))) {
      fail(`scale ${what} "${path}" must be under ${under.join(" or ")}`);
    }
    const s = resolve(root, path);
    if (s === undefined) fail(`scale ${what} "${path}" names no field of the schema`);
    if (s && s.type !== type) {
      fail(`scale ${what} "${path}" must name a field of type ${type}, not ${s.type ?? "unknown"}`);
    }
  };
  field("specReplicasPath", scale.specReplicasPath, [".spec"], "integer");
  field("statusReplicasPath", scale.statusReplicasPath, [".status"], "integer");
  if (scale.labelSelectorPath !== undefined) {
    field("labelSelectorPath", scale.labelSelectorPath, [".spec", ".status"], "string");
  }
}

/** What {@link buildCrd} assembles. */
export interface CrdParts {
  group: string;
  version: string;
  names: CustomResourceDefinitionNames;
  scope: "Namespaced" | "Cluster";
  spec: JSONSchemaProps;
  status?: JSONSchemaProps;
  scale?: ScaleSubresource;
  validations: (ValidationRule | string)[];
  printerColumns: PrinterColumn[];
  description: string;
}

/**
 * Assembles the CRD object from structural schemas already generated.
 *
 * @throws {TypeError} When a schema root is not an object, or a column or scale path is wrong.
 */
export function buildCrd(
  p: CrdParts,
): CustomResourceDefinition & {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
} {
  const fail = (why: string): never => {
    throw new TypeError(`Cannot define resource "${p.names.kind}": ${why}`);
  };
  const spec: JSONSchemaProps = { ...p.spec };
  if (spec.type !== "object") fail("spec must be a z.object()");
  if (p.status && p.status.type !== "object") fail("status must be a z.object()");
  spec.description ??= `Desired state of ${p.names.kind}`;
  if (p.validations.length) {
    spec["x-kubernetes-validations"] = [
      ...(spec["x-kubernetes-validations"] ?? []),
      ...toRules(p.validations),
    ];
  }
  // A spec that accepts {} defaults to {} so that the server fills in its nested defaults.
  const specOptional = !spec.required?.length;
  if (specOptional && spec.default === undefined) spec.default = {};
  const properties: Record<string, JSONSchemaProps> = {
    apiVersion: {
      type: "string",
      description: "APIVersion defines the versioned schema of this representation of an object.",
    },
    kind: {
      type: "string",
      description: "Kind is a string value representing the REST resource this object represents.",
    },
    metadata: { type: "object" },
    spec,
  };
  if (p.status) {
    properties.status = { description: `Observed state of ${p.names.kind}`, ...p.status };
  }
  const root: JSONSchemaProps = { description: p.description, type: "object", properties };
  if (!specOptional) root.required = ["spec"];
  checkColumns(root, p.printerColumns, fail);
  if (p.scale) checkScale(root, p.scale, p.status !== undefined, fail);

  const names: CustomResourceDefinitionNames = {
    plural: p.names.plural,
    singular: p.names.singular,
    kind: p.names.kind,
    listKind: p.names.listKind,
  };
  if (p.names.shortNames?.length) names.shortNames = [...p.names.shortNames];
  if (p.names.categories?.length) names.categories = [...p.names.categories];
  const subresources: { status?: Record<string, never>; scale?: ScaleSubresource } = {};
  if (p.status) subresources.status = {};
  if (p.scale) subresources.scale = { ...p.scale };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${p.names.plural}.${p.group}` },
    spec: {
      group: p.group,
      names,
      scope: p.scope,
      versions: [{
        name: p.version,
        served: true,
        storage: true,
        schema: { openAPIV3Schema: root },
        ...(Object.keys(subresources).length ? { subresources } : {}),
        ...(p.printerColumns.length
          ? { additionalPrinterColumns: p.printerColumns.map((c) => ({ ...c })) }
          : {}),
      }],
    },
  };
}

type Crd = ReturnType<typeof buildCrd>;

/** A spoke version as the CRD needs it. */
export interface SpokePart {
  resource: Resource & { crd?: () => Crd; versions?: readonly string[] };
  served?: boolean;
  deprecated?: boolean | string;
}

/** Where the conversion webhook is until the operator points it at its own Service. */
export const CONVERSION_PLACEHOLDER = {
  service: { namespace: "system", name: "webhook-service", path: "/convert", port: 443 },
};

const PRIORITY = /^v([0-9]+)(?:(alpha|beta)([0-9]+))?$/;

/** Kubernetes' version priority: GA before beta before alpha, higher numbers first. */
function priority(a: string, b: string): number {
  const key = (v: string) => {
    const m = PRIORITY.exec(v)!;
    return [m[2] ? (m[2] === "beta" ? 1 : 0) : 2, Number(m[1]), Number(m[3] ?? 0)];
  };
  const [x, y] = [key(a), key(b)];
  return y[0] - x[0] || y[1] - x[1] || y[2] - x[2];
}

/**
 * Adds the spoke versions to a hub's single-version CRD: each spoke's schema, subresources
 * and columns, served (unless told otherwise) and not stored, in priority order, with a
 * conversion webhook.
 *
 * @throws {TypeError} When a spoke is not a `defineResource` of the same group, kind,
 * plural and scope, has versions of its own, or repeats a version.
 */
export function withVersions(hub: Crd, spokes: readonly SpokePart[], storage?: string): Crd {
  const { group, names, scope } = hub.spec;
  const hubVersion = hub.spec.versions[0].name;
  const fail = (why: string): never => {
    throw new TypeError(`Cannot define resource "${names.kind}": ${why}`);
  };
  const seen = new Set([hubVersion]);
  const versions = [...hub.spec.versions];
  for (const s of spokes) {
    const r = s?.resource;
    if (typeof r?.crd !== "function") {
      fail(
        `each entry of versions needs the resource of its version, from defineResource; got ${
          r?.apiVersion ?? typeof r
        }`,
      );
    }
    if ((r.versions?.length ?? 1) > 1) {
      fail(`version "${r.version}" lists versions of its own; list every version on the hub`);
    }
    const crd = r.crd!();
    const same = crd.spec.group === group && crd.spec.names.kind === names.kind &&
      crd.spec.names.plural === names.plural && crd.spec.scope === scope;
    if (!same) {
      fail(
        `version "${r.version}" must have the hub's group, kind, plural and scope ` +
          `(${group}, ${names.kind}, ${names.plural}, ${scope}), not ` +
          `(${crd.spec.group}, ${crd.spec.names.kind}, ${crd.spec.names.plural}, ${crd.spec.scope})`,
      );
    }
    if (seen.has(r.version)) fail(`version "${r.version}" is declared twice`);
    seen.add(r.version);
    const { served: _s, storage: _t, ...rest } = crd.spec.versions[0];
    versions.push({
      ...rest,
      served: s.served ?? true,
      storage: false,
      ...(s.deprecated ? { deprecated: true } : {}),
      ...(typeof s.deprecated === "string" ? { deprecationWarning: s.deprecated } : {}),
    });
  }
  if (storage !== undefined) {
    if (!seen.has(storage)) {
      fail(`storage "${storage}" is not one of its versions (${[...seen].join(", ")})`);
    }
    for (const v of versions) v.storage = v.name === storage;
    if (!versions.find((v) => v.storage)!.served) {
      fail(`storage version "${storage}" is not served`);
    }
  }
  versions.sort((a, b) => priority(a.name, b.name));
  return {
    ...hub,
    spec: {
      ...hub.spec,
      versions,
      conversion: {
        strategy: "Webhook",
        webhook: {
          conversionReviewVersions: ["v1"],
          clientConfig: structuredClone(CONVERSION_PLACEHOLDER),
        },
      },
    },
  };
}
