/**
 * `defineResource`: describe a custom resource once, with zod, and get its TypeScript type,
 * runtime validation and its CustomResourceDefinition.
 *
 * @module
 */
import { z, type ZodInput, type ZodType } from "../util/zod.ts";
import type { KubeObject, ObjectMeta } from "../core/object.ts";
import type { Resource } from "../core/resource.ts";
import { pluralize } from "../core/resource.ts";
import type { SpokeVersion } from "./conversion.ts";
import { makeConverter, type SpokeFunctions } from "./_conversion.ts";
import { toStructuralSchema } from "./schema.ts";
import type { PrinterColumn, ScaleSubresource, ValidationRule } from "../core/crd.ts";
import type { CustomResourceDefinition } from "../core/kinds_cluster.ts";
import { buildCrd, checkNames, withVersions } from "./_crd_build.ts";
import { KubenoError } from "../util/error.ts";

/** A custom resource's object: what the API server returns for it. */
export interface ResourceObject<Spec, Status = never> extends KubeObject {
  /** `group/version`. */
  apiVersion?: string;
  /** The kind. */
  kind?: string;
  /** Standard metadata. */
  metadata: ObjectMeta;
  /** Desired state, with the schema's defaults applied. */
  spec: Spec;
  /** Observed state, written by the controller through the status subresource. */
  status?: Status;
}

/**
 * The type a zod schema parses to (zod's `z.output<S>`, `z.infer<S>`); `never` for an optional
 * schema left out (`undefined`).
 *
 * @typeParam S The schema, or `undefined`.
 */
// zod v4 defines `z.output<S>` as exactly `S["_zod"]["output"]`; spelling it out keeps zod's
// undocumented `output` helper out of kubeno's public signatures.
export type OutputOf<S> = S extends ZodType ? S["_zod"]["output"] : never;

/** Where the scale subresource finds replicas; `true` means the defaults. */
export interface ScaleOptions {
  /**
   * JSON path of the desired replicas (an integer under `.spec`).
   * @default ".spec.replicas"
   */
  specReplicasPath?: string;
  /**
   * JSON path of the observed replicas (an integer under `.status`).
   * @default ".status.replicas"
   */
  statusReplicasPath?: string;
  /**
   * JSON path of the serialized label selector (a string under `.spec` or `.status`).
   * @default no selector
   */
  labelSelectorPath?: string;
}

/**
 * What {@link defineResource} needs.
 *
 * @typeParam Spec The zod schema of `spec`.
 * @typeParam Status The zod schema of `status`, or `undefined`.
 * @typeParam Versions The resources of the other versions (`versions`), inferred.
 */
export interface DefineResourceOptions<
  Spec extends ZodType,
  Status extends ZodType | undefined,
  Versions extends readonly Resource<any>[] = [],
> {
  /** API group, a DNS subdomain with at least one dot, e.g. `apps.kubeno.dev`. */
  group: string;
  /**
   * Version, e.g. `v1`, `v1alpha1`, `v2beta3`. With `versions`, this is the hub: the version
   * controllers reconcile and webhooks see, and (unless `storage` says otherwise) the one
   * objects are stored at.
   */
  version: string;
  /** Kind in UpperCamelCase, e.g. `Myapp`. */
  kind: string;
  /**
   * Lower-case plural used in URLs.
   * @default the kind lower-cased with an English plural suffix
   */
  plural?: string;
  /**
   * Lower-case singular.
   * @default the kind lower-cased
   */
  singular?: string;
  /**
   * Kind of lists.
   * @default `${kind}List`
   */
  listKind?: string;
  /**
   * Whether objects live in namespaces.
   * @default "Namespaced"
   */
  scope?: "Namespaced" | "Cluster";
  /**
   * Short names for kubectl, e.g. `["ma"]`.
   * @default []
   */
  shortNames?: string[];
  /**
   * kubectl categories, e.g. `["all"]`.
   * @default []
   */
  categories?: string[];
  /** Schema of `spec`, a zod object. */
  spec: Spec;
  /**
   * Schema of `status`, a zod object; enables the status subresource.
   * @default no status
   */
  status?: Status;
  /**
   * Extra `kubectl get` columns.
   * @default []
   */
  printerColumns?: PrinterColumn[];
  /**
   * CEL rules on `spec` (`self` is the spec).
   * @default []
   */
  validations?: (ValidationRule | string)[];
  /**
   * Enables the scale subresource; requires `status`.
   * @default no scale subresource
   */
  scale?: ScaleOptions | true;
  /**
   * Description of the resource (the schema root).
   * @default `${kind} is the Schema for the ${plural} API`
   */
  description?: string;
  /**
   * The version the API server stores objects at: this version (the hub) or one of
   * `versions`. Moving it is one line; controllers and webhooks keep working at the hub, the
   * conversion webhook converts between them, and the operator's `migrate-storage` then
   * rewrites the stored objects at it. As kubebuilder's `+kubebuilder:storageversion` marker.
   * @default the hub (`version`)
   */
  storage?: string;
  /**
   * The resource's other versions (spokes), each with its own resource (a `defineResource`
   * of the same group, kind, plural and scope) and two functions converting its objects to
   * and from this version, the hub. The CRD then lists every version, stores this one and
   * names a conversion webhook, which the operator serves (`/convert`). Round trips are
   * lossless: see `SpokeVersion` and `CONVERSION_DATA_ANNOTATION`.
   * @default [] (one version)
   */
  versions?: {
    [I in keyof Versions]: SpokeVersion<
      Versions[I],
      ResourceObject<OutputOf<Spec>, OutputOf<Status>>
    >;
  };
}

/** One failed field of a resource object. */
export interface ResourceIssue {
  /** Path of the field, e.g. `spec.ports[0].port`. */
  path: string;
  /** What is wrong with it. */
  message: string;
}

/**
 * An object does not satisfy its resource's schema; `issues` names each field.
 *
 * @example Inspect the failed fields
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { defineResource, ResourceValidationError } from "./define_resource.ts";
 * const Myapp = defineResource({
 *   group: "apps.kubeno.dev",
 *   version: "v1",
 *   kind: "Myapp",
 *   spec: z.object({ replicas: z.int().min(0) }),
 * });
 * try {
 *   Myapp.parse({ metadata: { name: "a" }, spec: { replicas: -1 } });
 * } catch (e) {
 *   if (!(e instanceof ResourceValidationError) || e.issues[0].path !== "spec.replicas") throw e;
 * }
 * ```
 */
export class ResourceValidationError extends KubenoError {
  /** `"ResourceValidationError"`. */
  override name = "ResourceValidationError";
  /** Each failed field. */
  readonly issues: ResourceIssue[];

  /**
   * Creates the error; the message names the kind, the object and every failed field.
   *
   * @param kind The resource's kind.
   * @param ref `namespace/name` of the object, when known.
   * @param issues Each failed field.
   * @param options The zod error as `cause`.
   */
  constructor(
    kind: string,
    ref: string | undefined,
    issues: ResourceIssue[],
    options?: ErrorOptions,
  ) {
    const what = ref ? `${kind} "${ref}"` : kind;
    super(
      `Invalid ${what}: ${issues.map((i) => `${i.path || "(object)"}: ${i.message}`).join("; ")}`,
      options,
    );
    this.issues = issues;
  }
}

/** The outcome of `safeParse`. */
export type SafeParseResult<T> =
  | { success: true; data: T }
  | { success: false; error: ResourceValidationError };

/**
 * A custom resource defined with {@link defineResource}: a {@link Resource} typed by its
 * object, plus its CRD and validation.
 */
export interface CustomResource<
  Spec extends ZodType = ZodType,
  Status extends ZodType | undefined = undefined,
> extends Resource<ResourceObject<OutputOf<Spec>, OutputOf<Status>>> {
  /** Lower-case singular. */
  readonly singular: string;
  /** Kind of lists. */
  readonly listKind: string;
  /** `Namespaced` or `Cluster`. */
  readonly scope: "Namespaced" | "Cluster";
  /** Short names for kubectl. */
  readonly shortNames: readonly string[];
  /** kubectl categories. */
  readonly categories: readonly string[];
  /** The zod schema of `spec`. */
  readonly specSchema: Spec;
  /** The zod schema of `status`, if any. */
  readonly statusSchema: Status;
  /** Every version the CRD declares: this one (the hub) first, then `versions`. */
  readonly versions: readonly string[];
  /** The version objects are stored at: the hub unless `storage` named another. */
  readonly storageVersion: string;
  /**
   * Converts an object of any version of this resource to another, as the operator's
   * conversion webhook does (see `SpokeVersion`); useful to test conversions.
   * @typeParam T The target's object type, from `to` when it is a resource.
   * @typeParam O The object's type.
   * @param object An object of one of `versions`.
   * @param to The target: a version's resource, its `apiVersion` or its version name.
   * @returns The object at `to`, a new object.
   * @throws {ConversionError} When a version or the kind is not this resource's, or a
   * conversion function throws.
   */
  convert<T extends KubeObject = KubeObject, O extends KubeObject = KubeObject>(
    object: O,
    to: Resource<T> | string,
  ): T;
  /**
   * The CustomResourceDefinition, a fresh copy on each call. With `versions`, its
   * `spec.conversion` names a conversion webhook at `/convert` of the Service
   * `system/webhook-service` (controller-gen's placeholder): the operator program points it
   * at its own Service (`install`, `manifests`, `chart`) or at itself (`run` outside a
   * cluster).
   * @returns The apiextensions.k8s.io/v1 object, named `<plural>.<group>`, with `apiVersion`
   * and `kind` set.
   */
  crd(): CustomResourceDefinition & {
    apiVersion: "apiextensions.k8s.io/v1";
    kind: "CustomResourceDefinition";
  };
  /**
   * Validates an object with the zod schemas (CEL rules are left to the API server) and
   * applies defaults.
   * @param value Any value.
   * @returns The typed object.
   * @throws {ResourceValidationError} Naming every failed field.
   */
  parse(value: unknown): ResourceObject<OutputOf<Spec>, OutputOf<Status>>;
  /**
   * Like `parse`, without throwing.
   * @param value Any value.
   * @returns The typed object or the error.
   */
  safeParse(value: unknown): SafeParseResult<ResourceObject<OutputOf<Spec>, OutputOf<Status>>>;
}

function issuePath(path: PropertyKey[]): string {
  return path.map((p, i) => typeof p === "number" ? `[${p}]` : `${i ? "." : ""}${String(p)}`).join(
    "",
  );
}

/**
 * Defines a custom resource from zod schemas. Everything is checked here, at definition
 * time: names, and that the schemas have a structural OpenAPI form, so an operator that
 * starts has a CRD the API server accepts.
 *
 * @param options Group, version, kind, the `spec` (and `status`) schemas and CRD options.
 * @returns The resource: usable wherever a {@link Resource} is, with `crd()`, `parse` and `safeParse`.
 * @throws {TypeError} When a name breaks a Kubernetes rule, a printer column or scale path
 * names no field, or a schema has no structural form (the message names the field path).
 *
 * @example Define a resource
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { defineResource } from "./define_resource.ts";
 * const Myapp = defineResource({
 *   group: "apps.kubeno.dev",
 *   version: "v1alpha1",
 *   kind: "Myapp",
 *   spec: z.object({
 *     image: z.string().describe("Container image to run"),
 *     replicas: z.int().min(0).default(1).describe("Desired pods"),
 *   }),
 *   status: z.object({ phase: z.enum(["Pending", "Running", "Failed"]).optional() }),
 *   printerColumns: [{ name: "Phase", jsonPath: ".status.phase", type: "string" }],
 * });
 * const crd = Myapp.crd();
 * if (crd.metadata.name !== "myapps.apps.kubeno.dev") throw new Error();
 * const app = Myapp.parse({ metadata: { name: "a" }, spec: { image: "nginx" } });
 * if (app.spec.replicas !== 1) throw new Error();
 * ```
 *
 * @example Two versions: v1 (the hub, stored) and v1alpha1, converted both ways
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { defineResource } from "./define_resource.ts";
 * const V1alpha1 = defineResource({
 *   group: "example.com", version: "v1alpha1", kind: "Widget",
 *   spec: z.object({ size: z.string() }),
 * });
 * const Widget = defineResource({
 *   group: "example.com", version: "v1", kind: "Widget",
 *   spec: z.object({ size: z.int(), color: z.string().optional() }),
 *   versions: [{
 *     resource: V1alpha1,
 *     deprecated: true,
 *     toHub: (old, restored) => ({ spec: { size: Number(old.spec.size), color: restored?.spec.color } }),
 *     fromHub: (w) => ({ spec: { size: String(w.spec.size) } }),
 *   }],
 * });
 * const crd = Widget.crd();
 * if (crd.spec.versions.find((v) => v.storage)?.name !== "v1") throw new Error();
 * const old = Widget.convert(
 *   { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "a" }, spec: { size: 2, color: "red" } },
 *   V1alpha1,
 * );
 * if (old.spec.size !== "2" || Widget.convert(old, Widget).spec.color !== "red") throw new Error();
 * ```
 */
export function defineResource<
  Spec extends ZodType,
  Status extends ZodType | undefined = undefined,
  const Versions extends readonly Resource<any>[] = [],
>(
  options: DefineResourceOptions<Spec, Status, Versions>,
): CustomResource<Spec, Status> {
  const { group, version, kind } = options;
  const plural = options.plural ?? pluralize(kind);
  const names = {
    plural,
    singular: options.singular ?? kind.toLowerCase(),
    kind,
    listKind: options.listKind ?? `${kind}List`,
    shortNames: [...(options.shortNames ?? [])],
    categories: [...(options.categories ?? [])],
  };
  const scope = options.scope ?? "Namespaced";
  checkNames(group, version, names, scope);
  const spec = toStructuralSchema(options.spec, { name: kind, path: "spec" });
  const status = options.status
    ? toStructuralSchema(options.status, { name: kind, path: "status" })
    : undefined;
  const scale: ScaleSubresource | undefined = options.scale === undefined ? undefined : {
    specReplicasPath: ".spec.replicas",
    statusReplicasPath: ".status.replicas",
    ...(options.scale === true ? {} : options.scale),
  };
  const single = buildCrd({
    group,
    version,
    names,
    scope,
    spec,
    status,
    scale,
    validations: options.validations ?? [],
    printerColumns: options.printerColumns ?? [],
    description: options.description ?? `${kind} is the Schema for the ${plural} API`,
  });
  const spokes = (options.versions ?? []) as readonly SpokeVersion<Resource, KubeObject>[];
  if (options.storage !== undefined && !spokes.length && options.storage !== version) {
    throw new TypeError(
      `Cannot define resource "${kind}": storage "${options.storage}" is not one of its versions (${version})`,
    );
  }
  const crd = spokes.length ? withVersions(single, spokes, options.storage) : single;
  const convert = makeConverter({
    group,
    kind,
    hub: version,
    spokes: new Map(
      spokes.map((s) => [s.resource.version, s as unknown as SpokeFunctions]),
    ),
  });

  const apiVersion = `${group}/${version}`;
  const specOptional = (crd.spec.versions[0].schema.openAPIV3Schema.required ?? []).length === 0;
  const objectSchema = z.object({
    apiVersion: z.literal(apiVersion).optional(),
    kind: z.literal(kind).optional(),
    metadata: z.looseObject({
      name: z.string().optional(),
      namespace: z.string().optional(),
      labels: z.record(z.string(), z.string()).optional(),
      annotations: z.record(z.string(), z.string()).optional(),
    }),
    spec: specOptional ? options.spec.prefault({} as ZodInput<Spec>) : options.spec,
    ...(options.status ? { status: options.status.optional() } : {}),
  });
  type T = ResourceObject<OutputOf<Spec>, OutputOf<Status>>;
  const safeParse = (value: unknown): SafeParseResult<T> => {
    const result = objectSchema.safeParse(value);
    if (result.success) return { success: true, data: result.data as unknown as T };
    const meta = (value as { metadata?: ObjectMeta } | null)?.metadata;
    const ref = meta?.name ? [meta.namespace, meta.name].filter(Boolean).join("/") : undefined;
    const issues = result.error.issues.map((i) => ({
      path: issuePath(i.path),
      message: i.message,
    }));
    return {
      success: false,
      error: new ResourceValidationError(kind, ref, issues, { cause: result.error }),
    };
  };
  const frozen = JSON.stringify(crd);
  return Object.freeze({
    group,
    version,
    kind,
    plural,
    namespaced: scope === "Namespaced",
    apiVersion,
    singular: names.singular,
    listKind: names.listKind,
    scope,
    shortNames: Object.freeze(names.shortNames),
    categories: Object.freeze(names.categories),
    specSchema: options.spec,
    statusSchema: options.status as Status,
    versions: Object.freeze([version, ...spokes.map((s) => s.resource.version)]),
    storageVersion: options.storage ?? version,
    convert<U extends KubeObject>(object: KubeObject, to: Resource<U> | string): U {
      return convert(object, typeof to === "string" ? to : to.apiVersion) as U;
    },
    crd: (): ReturnType<typeof buildCrd> => JSON.parse(frozen),
    safeParse,
    parse(value: unknown): T {
      const r = safeParse(value);
      if (!r.success) throw r.error;
      return r.data;
    },
  });
}
