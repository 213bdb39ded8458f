// Generates kubeno's built-in kinds from the API server itself:
//
//   deno task gen:kinds            writes src/core/api/<group>/<version>.ts
//   deno task gen:kinds --check    exits 1 when the checked-in files are stale
//
// It starts the pinned test control plane (testenv/build.sh), reads every group/version the
// API server serves from /openapi/v3 and its discovery documents, and writes one module per
// OpenAPI package: an interface per schema reachable from a served kind (its description as
// JSDoc) and a `Resource` constant per served resource. tests/kinds_generated_test.ts runs the
// same generation and fails when the output differs from what is checked in.
//
// Names: each Kubernetes type keeps its own name unless two packages define it (Event in
// core/v1 and events.k8s.io/v1, HorizontalPodAutoscaler in autoscaling/v1 and v2, …); then a
// served kind beats a helper type, the group's preferred version beats an older one, and the
// groups in PRIORITY beat the rest; the others get their group and version as a prefix
// (EventsV1Event, AutoscalingV1HorizontalPodAutoscaler). A few types stay hand-written and
// are imported instead (HAND_WRITTEN): ObjectMeta and friends (core/object.ts), and the CRD
// schema types the schema layer builds (core/crd.ts).
import { startControlPlane } from "../src/testing/control_plane.ts";

/** One generated file: path relative to the repository root, and its formatted text. */
export interface GeneratedFile {
  path: string;
  text: string;
}

/** Where the generated modules live. */
export const OUT_DIR = "src/core/api";

type Schema = {
  description?: string;
  type?: string;
  format?: string;
  enum?: unknown[];
  items?: Schema;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  required?: string[];
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  $ref?: string;
  "x-kubernetes-group-version-kind"?: { group: string; version: string; kind: string }[];
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
};

interface ApiResource {
  name: string;
  kind: string;
  namespaced: boolean;
  group?: string;
  version?: string;
}

/** A served resource: the constant to emit. */
interface Served {
  schema: string;
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

/** Types written by hand and imported, not generated: schema name → [module, name]. */
const HAND_WRITTEN: Record<string, [string, string]> = {
  "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": ["object.ts", "ObjectMeta"],
  "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference": ["object.ts", "OwnerReference"],
  "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry": ["object.ts", "ManagedFieldsEntry"],
  "io.k8s.apimachinery.pkg.apis.meta.v1.Condition": ["object.ts", "Condition"],
  ...Object.fromEntries(
    [
      ["JSONSchemaProps", "JSONSchemaProps"],
      ["ValidationRule", "ValidationRule"],
      ["CustomResourceDefinitionSpec", "CustomResourceDefinitionSpec"],
      ["CustomResourceDefinitionNames", "CustomResourceDefinitionNames"],
      ["CustomResourceDefinitionVersion", "CustomResourceDefinitionVersion"],
      ["CustomResourceDefinitionCondition", "CustomResourceDefinitionCondition"],
      ["CustomResourceColumnDefinition", "PrinterColumn"],
      ["CustomResourceSubresourceScale", "ScaleSubresource"],
    ].map(([schema, name]) => [
      `io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.${schema}`,
      ["crd.ts", name],
    ]),
  ),
};

/** Names kubeno defines by hand in core/: a generated type never takes one. */
const RESERVED = new Set([
  "KubeObject",
  "ObjectMeta",
  "ObjectRef",
  "OpenObject",
  "OwnerReference",
  "ManagedFieldsEntry",
  "Condition",
  "Resource",
  "ResourceInit",
  "ObjectOf",
  "ObjectName",
  "JSONSchemaProps",
  "ValidationRule",
  "PrinterColumn",
  "ScaleSubresource",
  "CustomResourceDefinitionSpec",
  "CustomResourceDefinitionNames",
  "CustomResourceDefinitionVersion",
  "CustomResourceDefinitionCondition",
  "ResourceCondition",
  "WorkloadSpec",
  "ReplicaStatus",
  "Webhook",
  "PartialObjectMetadata",
  "MetadataOnlyResource",
]);

/** Packages that keep a contested name, in order (then the served kinds, then the rest). */
const PRIORITY = [
  "core/v1",
  "autoscaling/v2",
  "rbac/v1",
  "admissionregistration/v1",
  "authentication/v1",
];

/** Primitive stand-ins for apimachinery's value types. */
const PRIMITIVES: Record<string, string> = {
  "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "string",
  "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "string",
  "io.k8s.apimachinery.pkg.api.resource.Quantity": "number | string",
  "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "number | string",
  "io.k8s.apimachinery.pkg.runtime.RawExtension": "Record<string, unknown>",
  "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "Record<string, unknown>",
  "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": "unknown",
};

/** The module of an OpenAPI package: `io.k8s.api.apps.v1` → `apps/v1`. */
function moduleOf(pkg: string): string {
  const m = pkg.match(/^io\.k8s\.api\.([a-z0-9]+)\.(v[a-z0-9]+)$/) ??
    pkg.match(/^io\.k8s\.apiextensions-apiserver\.pkg\.apis\.(apiextensions)\.(v[a-z0-9]+)$/) ??
    pkg.match(/^io\.k8s\.kube-aggregator\.pkg\.apis\.(apiregistration)\.(v[a-z0-9]+)$/) ??
    pkg.match(/^io\.k8s\.apimachinery\.pkg\.apis\.(meta)\.(v1)$/);
  if (!m) throw new Error(`gen:kinds: no module for OpenAPI package "${pkg}"`);
  return `${m[1]}/${m[2]}`;
}

const pascal = (s: string) =>
  s.replace(/(^|[^a-zA-Z0-9])([a-z0-9])/g, (_, __, c) => c.toUpperCase());

/**
 * Reads the API server's OpenAPI v3 and discovery and generates the kind modules.
 *
 * @param get Fetches a path from the API server as admin and returns the parsed JSON.
 * @param version The server's version, named in the headers.
 * @param root The repository root (core.ts is read from there).
 * @returns The files, formatted with `deno fmt`: the modules and core.ts.
 */
export async function generateKinds(
  get: (path: string) => Promise<any>,
  version: string,
  root: string,
): Promise<GeneratedFile[]> {
  const index = await get("/openapi/v3");
  const gvPaths = Object.keys(index.paths).filter((p) =>
    p === "api/v1" || /^apis\/[^/]+\/[^/]+$/.test(p)
  ).sort();
  const schemas: Record<string, Schema> = {};
  const served: Served[] = [];
  const subresourceKinds: { group: string; version: string; kind: string }[] = [];
  const preferred = new Map<string, string>();
  for (const g of (await get("/apis")).groups) preferred.set(g.name, g.preferredVersion.version);
  preferred.set("", "v1");
  for (const p of gvPaths) {
    const doc = await get(index.paths[p].serverRelativeURL);
    Object.assign(schemas, doc.components.schemas);
    const [group, ver] = p === "api/v1" ? ["", "v1"] : p.split("/").slice(1);
    const discovery = await get(`/${p}`);
    for (const r of discovery.resources as ApiResource[]) {
      if (r.name.includes("/")) {
        subresourceKinds.push({ group: r.group ?? group, version: r.version ?? ver, kind: r.kind });
        continue;
      }
      served.push({
        schema: "",
        group,
        version: ver,
        kind: r.kind,
        plural: r.name,
        namespaced: r.namespaced,
      });
    }
  }
  const byGvk = new Map<string, string>();
  for (const [name, s] of Object.entries(schemas)) {
    if (name.endsWith("List")) continue;
    for (const g of s["x-kubernetes-group-version-kind"] ?? []) {
      if (!byGvk.has(`${g.group}/${g.version}/${g.kind}`) && !name.includes(".meta.v1.")) {
        byGvk.set(`${g.group}/${g.version}/${g.kind}`, name);
      }
    }
  }
  for (const s of served) {
    const name = byGvk.get(`${s.group}/${s.version}/${s.kind}`);
    if (!name) throw new Error(`gen:kinds: no schema for ${s.group}/${s.version} ${s.kind}`);
    s.schema = name;
  }
  served.sort((a, b) => a.schema.localeCompare(b.schema) || a.plural.localeCompare(b.plural));
  const kindSchemas = new Set(served.map((s) => s.schema));
  for (const k of subresourceKinds) {
    const name = byGvk.get(`${k.group}/${k.version}/${k.kind}`);
    if (name) kindSchemas.add(name);
  }

  // Every schema reachable from a served kind.
  const reachable = new Set<string>();
  const refsOf = (s: Schema | boolean | undefined, out: string[]) => {
    if (!s || typeof s !== "object") return;
    if (s.$ref) out.push(s.$ref.replace("#/components/schemas/", ""));
    for (const x of [s.items, s.additionalProperties, ...(s.allOf ?? []), ...(s.oneOf ?? [])]) {
      refsOf(x, out);
    }
    for (const p of Object.values(s.properties ?? {})) refsOf(p, out);
  };
  const queue = [...kindSchemas];
  while (queue.length) {
    const name = queue.pop()!;
    if (reachable.has(name) || HAND_WRITTEN[name] || PRIMITIVES[name]) continue;
    if (!schemas[name]) throw new Error(`gen:kinds: unknown schema "${name}"`);
    reachable.add(name);
    const refs: string[] = [];
    refsOf(schemas[name], refs);
    queue.push(...refs);
  }

  // Public names, unique across all modules.
  const pkgOf = (name: string) => name.slice(0, name.lastIndexOf("."));
  const shortOf = (name: string) => name.slice(name.lastIndexOf(".") + 1);
  const rank = (name: string) => {
    const mod = moduleOf(pkgOf(name));
    const [short, ver] = mod.split("/");
    const group = served.find((s) => moduleOf(pkgOf(s.schema)) === mod)?.group;
    const isPreferred = group === undefined || preferred.get(group) === ver;
    const p = PRIORITY.indexOf(mod);
    return [
      kindSchemas.has(name) ? 0 : 1,
      isPreferred ? 0 : 1,
      p < 0 ? PRIORITY.length : p,
      short,
    ] as const;
  };
  const publicName = new Map<string, string>();
  const byShort = new Map<string, string[]>();
  for (const name of reachable) {
    byShort.set(shortOf(name), [...(byShort.get(shortOf(name)) ?? []), name]);
  }
  for (const [short, names] of byShort) {
    names.sort((a, b) => {
      const [x, y] = [rank(a), rank(b)];
      for (let i = 0; i < x.length; i++) {
        if (x[i] < y[i]) return -1;
        if (x[i] > y[i]) return 1;
      }
      return 0;
    });
    names.forEach((name, i) => {
      const [mod, ver] = moduleOf(pkgOf(name)).split("/");
      publicName.set(
        name,
        i === 0 && !RESERVED.has(short) ? short : `${pascal(mod)}${pascal(ver)}${short}`,
      );
    });
  }
  const seen = new Map<string, string>();
  for (const [schema, name] of publicName) {
    if (seen.has(name)) {
      throw new Error(`gen:kinds: "${name}" names ${seen.get(name)} and ${schema}`);
    }
    seen.set(name, schema);
  }

  // One module per package.
  const modules = new Map<string, string[]>();
  for (const name of [...reachable].sort()) {
    const mod = moduleOf(pkgOf(name));
    modules.set(mod, [...(modules.get(mod) ?? []), name]);
  }
  const files: GeneratedFile[] = [];
  const exported: { mod: string; names: string[]; values: Set<string> }[] = [];
  for (const [mod, names] of [...modules].sort(([a], [b]) => a.localeCompare(b))) {
    exported.push({
      mod,
      names: names.map((n) => publicName.get(n)!).sort(),
      values: new Set(
        names.filter((n) => served.some((x) => x.schema === n)).map((n) => publicName.get(n)!),
      ),
    });
    const imports = new Map<string, Set<string>>();
    const use = (module: string, name: string) => {
      if (module === `../${mod}.ts`) return;
      imports.set(module, (imports.get(module) ?? new Set()).add(name));
    };
    const typeOf = (s: Schema | undefined): string => {
      if (!s) return "unknown";
      const ref = s.$ref ?? (s.allOf?.length === 1 ? s.allOf[0].$ref : undefined);
      if (ref) {
        const target = ref.replace("#/components/schemas/", "");
        if (PRIMITIVES[target]) return PRIMITIVES[target];
        const hand = HAND_WRITTEN[target];
        if (hand) {
          use(`../../${hand[0]}`, hand[1]);
          return hand[1];
        }
        const targetMod = moduleOf(pkgOf(target));
        use(`../${targetMod}.ts`, publicName.get(target)!);
        return publicName.get(target)!;
      }
      if (s["x-kubernetes-int-or-string"]) return "number | string";
      if (s.oneOf) return [...new Set(s.oneOf.map(typeOf))].join(" | ");
      switch (s.type) {
        case "string":
          return s.enum?.length
            ? `${
              s.enum.map((v) => JSON.stringify(v)).join(" | ")
            } | (string & Record<never, never>)`
            : "string";
        case "integer":
        case "number":
          return "number";
        case "boolean":
          return "boolean";
        case "array": {
          const item = typeOf(s.items);
          return /^[\w.]+$/.test(item) ? `${item}[]` : `(${item})[]`;
        }
        case "object":
          if (s.properties) return inlineObject(s);
          if (s.additionalProperties && typeof s.additionalProperties === "object") {
            return `Record<string, ${typeOf(s.additionalProperties)}>`;
          }
          return "Record<string, unknown>";
        default:
          return "unknown";
      }
    };
    const inlineObject = (s: Schema): string =>
      `{ ${
        Object.entries(s.properties ?? {}).map(([k, v]) =>
          `${prop(k)}${s.required?.includes(k) ? "" : "?"}: ${typeOf(v)}`
        ).join("; ")
      } }`;

    const body: string[] = [];
    for (const name of names) {
      const s = schemas[name];
      const pub = publicName.get(name)!;
      const isKind = kindSchemas.has(name) && s.properties?.metadata !== undefined;
      body.push(jsdoc(s.description ?? `${pub}.`, ""));
      if (isKind) use("../../object.ts", "KubeObject");
      // Marker types with no field (e.g. `WorkloadPodGroupBasicSchedulingPolicy`, 1.37).
      const empty = !isKind && Object.keys(s.properties ?? {}).length === 0;
      if (empty) body.push("// deno-lint-ignore no-empty-interface");
      body.push(`export interface ${pub}${isKind ? " extends KubeObject" : ""} {`);
      for (const [k, p] of Object.entries(s.properties ?? {})) {
        if (isKind && (k === "apiVersion" || k === "kind" || k === "metadata")) continue;
        const optional = s.required?.includes(k) ? "" : "?";
        body.push(jsdoc(p.description ?? k, "  "));
        body.push(`  ${prop(k)}${optional}: ${typeOf(p)};`);
      }
      body.push("}", "");
      // A schema served under several names gets one constant, for the first of them.
      const r = served.find((x) => x.schema === name);
      if (r) {
        use("../../resource.ts", "Resource");
        const gv = r.group ? `${r.group}/${r.version}` : r.version;
        body.push(
          `/** The \`${r.plural}\` resource (\`${gv}\`${
            r.namespaced ? "" : ", cluster-scoped"
          }). */`,
          `export const ${pub}: Resource<${pub}> = /* @__PURE__ */ resource<${pub}>({ group: ${
            JSON.stringify(r.group)
          }, version: ${JSON.stringify(r.version)}, kind: ${JSON.stringify(r.kind)}, plural: ${
            JSON.stringify(r.plural)
          }${r.namespaced ? "" : ", namespaced: false"} });`,
          "",
        );
      }
    }
    const groupVersion = served.find((s) => moduleOf(pkgOf(s.schema)) === mod);
    const gv = groupVersion
      ? (groupVersion.group ? `${groupVersion.group}/${groupVersion.version}` : "v1")
      : mod;
    const example = exampleFor(mod, names, publicName, served);
    const head = [
      `// Code generated by \`deno task gen:kinds\` from kube-apiserver ${version}'s OpenAPI v3. DO NOT EDIT.`,
      "/**",
      groupVersion
        ? ` * The \`${gv}\` API of Kubernetes ${version}: an interface per type and a \`Resource\``
        : ` * Types of Kubernetes ${version}'s \`${mod}\` package shared by the API groups.`,
      ...(groupVersion
        ? [
          " * constant per served kind. Each kind is a value (the resource to pass to the client,",
          " * `owns: [...]`, informers) and a type (the object).",
        ]
        : []),
      " *",
      ` * @example ${example.title}`,
      " * ```ts",
      ...example.lines.map((l) => ` * ${l}`),
      " * ```",
      " *",
      " * @module",
      " */",
    ];
    const importLines = [...imports].sort(([a], [b]) => a.localeCompare(b)).map(
      ([from, set]) => {
        const list = [...set].sort();
        if (from === "../../resource.ts") {
          return `import { type Resource, resource } from "${from}";`;
        }
        return `import type { ${list.join(", ")} } from "${from}";`;
      },
    );
    const text = [...head, ...importLines, "", ...body].join("\n");
    files.push({ path: `${OUT_DIR}/${mod}.ts`, text: await format(text) });
  }
  files.push({ path: CORE_ENTRY, text: await coreEntry(root, exported) });
  files.push({
    path: SCHEMA_DATA,
    text: await schemaData(version, schemas, reachable, publicName, moduleOf, pkgOf),
  });
  return files;
}

/**
 * The module the schema layer builds built-in zod schemas from (`builtinSchema`): every
 * generated type's OpenAPI v3 schema as one JSON string (parsed on first use, so importing it
 * costs a string literal), `$ref`s by public name, and a map from public name to TypeScript type.
 */
export const SCHEMA_DATA = "src/schema/_builtin_openapi.ts";

/** What the schema data keeps of an OpenAPI schema (the rest is documentation or merge hints). */
const KEPT = new Set([
  "type",
  "format",
  "description",
  "properties",
  "required",
  "items",
  "additionalProperties",
  "default",
  "allOf",
  "$ref",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
  "x-kubernetes-int-or-string",
  "x-kubernetes-preserve-unknown-fields",
]);

/** Stand-ins in the schema data for the value types and hand-written types. */
const SCHEMA_STANDINS: Record<string, Schema> = {
  "io.k8s.apimachinery.pkg.apis.meta.v1.Time": { type: "string", format: "date-time" },
  "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": { type: "string", format: "date-time" },
  "io.k8s.apimachinery.pkg.api.resource.Quantity": { "x-kubernetes-int-or-string": true },
  "io.k8s.apimachinery.pkg.util.intstr.IntOrString": { "x-kubernetes-int-or-string": true },
  "io.k8s.apimachinery.pkg.runtime.RawExtension": {
    type: "object",
    "x-kubernetes-preserve-unknown-fields": true,
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {
    type: "object",
    "x-kubernetes-preserve-unknown-fields": true,
  },
  "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": {
    "x-kubernetes-preserve-unknown-fields": true,
  },
};

/** The first sentence of a type's description, for the member that names it. */
function summary(description: string | undefined, name: string): string {
  const first = (description ?? "").split("\n")[0].match(/^.*?[.:](?=\s|$)/)?.[0] ??
    (description ?? "").split("\n")[0];
  return first.trim() || `The built-in type ${name}.`;
}

async function schemaData(
  version: string,
  schemas: Record<string, Schema>,
  reachable: Set<string>,
  publicName: Map<string, string>,
  moduleOf: (pkg: string) => string,
  pkgOf: (name: string) => string,
): Promise<string> {
  // Hand-written meta types are embedded from the API's own schema under their kubeno names;
  // the CRD schema types (recursive JSONSchemaProps and friends) are kept as free-form objects.
  const names = new Map(publicName);
  for (const [schema, [file, name]] of Object.entries(HAND_WRITTEN)) {
    if (file === "object.ts" && schemas[schema]) names.set(schema, name);
  }
  const free: Schema = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
  const clean = (s: Schema): Schema => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(s)) {
      if (!KEPT.has(k)) continue;
      if (k === "$ref") {
        const target = (v as string).replace("#/components/schemas/", "");
        const standin = SCHEMA_STANDINS[target] ??
          (HAND_WRITTEN[target] && !names.has(target) ? free : undefined);
        if (standin) Object.assign(out, standin);
        else out.$ref = names.get(target) ?? fail(`no public name for "${target}"`);
      } else if (k === "properties") {
        out.properties = Object.fromEntries(
          Object.entries(v as Record<string, Schema>).map(([p, ps]) => [p, clean(ps)]),
        );
      } else if (k === "items" || (k === "additionalProperties" && typeof v === "object")) {
        out[k] = clean(v as Schema);
      } else if (k === "allOf") {
        const parts = (v as Schema[]).map(clean);
        // `allOf: [{ $ref }]` only adds a description or default to a reference.
        if (parts.length === 1) Object.assign(out, parts[0], out);
        else out.allOf = parts;
      } else out[k] = v;
    }
    return out as Schema;
  };
  const fail = (why: string): never => {
    throw new Error(`gen:kinds: schema data: ${why}`);
  };
  const data: Record<string, Schema> = {};
  const types = new Map<string, Set<string>>();
  for (const [schema, name] of [...names].sort(([, a], [, b]) => a.localeCompare(b))) {
    if (!reachable.has(schema) && !Object.hasOwn(HAND_WRITTEN, schema)) continue;
    const s = schemas[schema];
    if (!s) continue;
    const { "x-kubernetes-group-version-kind": gvk, ...rest } = s;
    const cleaned = clean(rest);
    if (gvk && cleaned.properties) {
      // A kind's apiVersion and kind are set by the API server's clients; keep them optional.
      cleaned.required = cleaned.required?.filter((r) => r !== "apiVersion" && r !== "kind");
    }
    data[name] = cleaned;
    const from = HAND_WRITTEN[schema]
      ? `../core/${HAND_WRITTEN[schema][0]}`
      : `../core/api/${moduleOf(pkgOf(schema))}.ts`;
    types.set(from, (types.get(from) ?? new Set()).add(name));
  }
  const imports = [...types].sort(([a], [b]) => a.localeCompare(b)).map(([from, set]) =>
    `import type { ${[...set].sort().join(", ")} } from "${from}";`
  );
  const keys = Object.keys(data).sort();
  const text = [
    `// Code generated by \`deno task gen:kinds\` from kube-apiserver ${version}'s OpenAPI v3. DO NOT EDIT.`,
    "/**",
    ` * Private: the OpenAPI v3 schema of every built-in type of Kubernetes ${version}, from which`,
    " * `builtin.ts` builds zod schemas on first use. One JSON string, so that importing this",
    " * module costs no object graph; `$ref`s name types by their public names.",
    " *",
    " * @module",
    " */",
    ...imports,
    "",
    "/** Every built-in type by its public name. */",
    "export interface BuiltinTypes {",
    ...keys.flatMap((k) => [jsdoc(summary(data[k].description, k), "  "), `  ${k}: ${k};`]),
    "}",
    "",
    "/** The schemas, as JSON: `{ [publicName]: OpenAPI v3 schema }`. */",
    `export const BUILTIN_OPENAPI: string = ${
      JSON.stringify(JSON.stringify(data, keys.length ? undefined : undefined))
    };`,
    "",
  ].join("\n");
  return await format(text);
}

/** The entry point whose block of re-exports the generator owns. */
export const CORE_ENTRY = "core.ts";
const BEGIN = "// generated:kinds:begin (deno task gen:kinds; do not edit by hand)";
const END = "// generated:kinds:end";

/** core.ts with its generated block (every generated name, explicitly re-exported) renewed. */
async function coreEntry(
  root: string,
  exported: { mod: string; names: string[]; values: Set<string> }[],
): Promise<string> {
  const current = await Deno.readTextFile(`${root}/${CORE_ENTRY}`);
  const a = current.indexOf(BEGIN), b = current.indexOf(END);
  if (a < 0 || b < a) {
    throw new Error(`gen:kinds: ${CORE_ENTRY} has no "${BEGIN}" … "${END}" block`);
  }
  const block = exported.map(({ mod, names, values }) =>
    `export { ${
      names.map((n) => values.has(n) ? n : `type ${n}`).join(", ")
    } } from "./${OUT_DIR}/${mod}.ts";`
  ).join("\n");
  return await format(`${current.slice(0, a)}${BEGIN}\n${block}\n${current.slice(b)}`);
}

function exampleFor(
  mod: string,
  names: string[],
  publicName: Map<string, string>,
  served: Served[],
): { title: string; lines: string[] } {
  const kind = served.find((s) => names.includes(s.schema) && publicName.get(s.schema));
  if (kind) {
    const pub = publicName.get(kind.schema)!;
    return {
      title: "A kind is a value and a type",
      lines: [
        `import { ${pub} } from "./${mod.split("/")[1]}.ts";`,
        `const name: ${pub}["metadata"]["name"] = "example";`,
        `if (${pub}.plural !== ${JSON.stringify(kind.plural)} || !name) throw new Error();`,
      ],
    };
  }
  const pub = publicName.get(names[0])!;
  return {
    title: "Types only",
    lines: [
      `import type { ${pub} } from "./${mod.split("/")[1]}.ts";`,
      `const value: Partial<${pub}> = {};`,
      `if (typeof value !== "object") throw new Error();`,
    ],
  };
}

function prop(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name);
}

function jsdoc(text: string, indent: string): string {
  const lines = text.trim().replaceAll("*/", "*\\/").split("\n").map((l) =>
    l.trimEnd().replace(/^(\s*)@/, "$1\\@")
  );
  if (lines.length === 1) return `${indent}/** ${lines[0]} */`;
  return [
    `${indent}/**`,
    ...lines.map((l) => l ? `${indent} * ${l}` : `${indent} *`),
    `${indent} */`,
  ]
    .join("\n");
}

/**
 * Formats TypeScript with the repository's `deno fmt` settings, twice: one pass is not always
 * a fixed point (long unions inside arrays), and a file must not change when fmt runs on it.
 */
async function format(text: string): Promise<string> {
  return await formatOnce(await formatOnce(text));
}

async function formatOnce(text: string): Promise<string> {
  const root = new URL("..", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext", "ts", "-"],
    cwd: root,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  if (!out.success) {
    throw new Error(`gen:kinds: deno fmt failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** Starts the pinned control plane and generates the files from it. */
export async function generateFromControlPlane(root: string): Promise<GeneratedFile[]> {
  await using cp = await startControlPlane();
  const get = async (path: string) => {
    const res = await cp.request("GET", path);
    if (res.status !== 200) throw new Error(`gen:kinds: GET ${path}: HTTP ${res.status}`);
    return res.body;
  };
  const version = (await get("/version")).gitVersion as string;
  return await generateKinds(get, version, root);
}

/** The files under OUT_DIR that are stale, missing or no longer generated. */
export async function staleFiles(files: GeneratedFile[], root: string): Promise<string[]> {
  const stale: string[] = [];
  const want = new Set(files.map((f) => f.path));
  for (const f of files) {
    const have = await Deno.readTextFile(`${root}/${f.path}`).catch(() => undefined);
    if (have !== f.text) stale.push(f.path);
  }
  for await (const path of walk(`${root}/${OUT_DIR}`)) {
    const rel = path.slice(root.length + 1);
    if (!want.has(rel)) stale.push(rel);
  }
  return stale.sort();
}

async function* walk(dir: string): AsyncGenerator<string> {
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch {
    return;
  }
  for (const e of entries) {
    if (e.isDirectory) yield* walk(`${dir}/${e.name}`);
    else if (e.name.endsWith(".ts")) yield `${dir}/${e.name}`;
  }
}

if (import.meta.main) {
  const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
  const files = await generateFromControlPlane(root);
  const stale = await staleFiles(files, root);
  if (Deno.args.includes("--check")) {
    if (stale.length) {
      console.error(`gen:kinds: stale, run deno task gen:kinds: ${stale.join(", ")}`);
      Deno.exit(1);
    }
    console.log(`gen:kinds: ${files.length} files up to date`);
  } else {
    for (const rel of stale) {
      if (!files.some((f) => f.path === rel)) await Deno.remove(`${root}/${rel}`);
    }
    for (const f of files) {
      await Deno.mkdir(`${root}/${f.path.slice(0, f.path.lastIndexOf("/"))}`, { recursive: true });
      await Deno.writeTextFile(`${root}/${f.path}`, f.text);
    }
    console.log(
      `gen:kinds: wrote ${files.length} files under ${OUT_DIR} (${stale.length} changed)`,
    );
  }
}
