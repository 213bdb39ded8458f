/**
 * Admission for a resource: `default` (a mutating webhook; kubeno computes the JSON patch
 * from what the handler changed) and `validate` (a validating webhook that sees CREATE,
 * UPDATE and DELETE, with the old object on UPDATE). It reads like the controller next to it:
 *
 * ```ts
 * import { admission } from "./admission.ts";
 * import { defineResource } from "../schema/define_resource.ts";
 * import { z } from "../util/zod.ts";
 *
 * const Myapp = defineResource({
 *   group: "apps.example.com", version: "v1", kind: "Myapp",
 *   spec: z.object({ replicas: z.int().optional() }),
 * });
 * export const webhook = admission(Myapp, {
 *   default(app) { app.spec.replicas ??= 1; },
 *   validate({ object }) {
 *     if (object && (object.spec.replicas ?? 0) > 100) return "spec.replicas must be at most 100";
 *   },
 * });
 * ```
 *
 * Flow: the webhook server (`startWebhookServer`) routes each AdmissionReview to
 * {@linkcode Admission.mutate} or {@linkcode Admission.validate} by path
 * (`/mutate-<group>-<version>-<kind>`, `/validate-...`, kubebuilder's layout).
 *
 * Guarantees: a handler never sees a malformed request; its exceptions become denials that
 * carry the message (logged under `["kubeno", "webhook"]`); dry-run requests reach handlers
 * with `dryRun: true`; the object a `default` handler gets is a copy.
 *
 * Assumptions: handlers have no side effects outside the cluster object (`sideEffects:
 * None`); set `sideEffects: "NoneOnDryRun"` and check `dryRun` when they do.
 *
 * @module
 */
import { isDnsSubdomain } from "../util/names.ts";
import { getLogger } from "../util/log.ts";
import { firstLine } from "../util/cli_io.ts";
import { type FieldError, invalidStatus, reasonForCode } from "./field_error.ts";
import { diffJson } from "./_json_patch.ts";
import type {
  AdmissionOperation,
  AdmissionRequest,
  AdmissionResponse,
  UserInfo,
} from "./admission_review.ts";
import type { LabelSelector } from "../core/kinds.ts";
import type { PolicyRule } from "../core/kinds_cluster.ts";
import type { KubeObject } from "../core/object.ts";
import type { Resource } from "../core/resource.ts";
import { webhookConfigurations, type WebhookManifestContext } from "./manifests.ts";
import { KubenoError } from "../util/error.ts";

const log = getLogger(["kubeno", "webhook"]);

/**
 * What every admission handler is told about the request besides the objects; part of each
 * {@link AdmissionContext}.
 */
export interface AdmissionContextBase {
  /** True for dry runs: nothing will be persisted. */
  dryRun: boolean;
  /** Who made the request. */
  userInfo: UserInfo;
  /** The raw request (namespace, name, subresource, options, uid). */
  request: AdmissionRequest;
  /** Aborts when the API server's deadline for this call has passed. */
  signal: AbortSignal;
  /**
   * Adds a warning, returned to the client in a `Warning` header.
   * @param message The warning text.
   */
  warn(message: string): void;
}

/**
 * What a handler sees, by operation: CREATE has `object`, UPDATE has `object` and
 * `oldObject`, DELETE has `oldObject` (narrow on `operation`, also after destructuring).
 */
export type AdmissionContext<T> =
  | AdmissionContextBase & { operation: "CREATE"; object: T; oldObject?: undefined }
  | AdmissionContextBase & { operation: "UPDATE"; object: T; oldObject: T }
  | AdmissionContextBase & { operation: "DELETE"; object?: undefined; oldObject: T };

/**
 * What `validate` returns: nothing (or `true`, or an empty list) to allow; a string to deny
 * with that message (reason `Forbidden`); field errors to deny as the API server refuses an
 * invalid object (code 422, reason `Invalid`, one `details.causes` entry per field, so that
 * kubectl prints `The CronJob "x" is invalid: spec.schedule: Invalid value: …`); or a result
 * object with warnings.
 */
export type ValidationResult =
  | void
  | undefined
  | boolean
  | string
  | readonly FieldError[]
  | {
    /** @default true */
    allowed?: boolean;
    /** Why the request is denied. */
    message?: string;
    /** The refused fields: the denial becomes 422 `Invalid` with causes. */
    fieldErrors?: readonly FieldError[];
    /** Warnings for the client. */
    warnings?: string[];
    /**
     * HTTP code reported to the client when denied; its reason follows (422 `Invalid`,
     * 400 `BadRequest`, 409 `Conflict`…).
     * @default 403 (422 with `fieldErrors`)
     */
    code?: number;
  };

/** Operations a validating webhook can be registered for. */
export type ValidatedOperation = Exclude<AdmissionOperation, "CONNECT">;

/** Options of {@linkcode admission}, typed by the resource's object type `T`. */
export interface AdmissionOptions<T extends KubeObject> {
  /**
   * Sets defaults: change `object` in place (or return a replacement); kubeno sends the
   * difference as a JSON patch. Runs for CREATE and UPDATE. Throw {@linkcode AdmissionDenied}
   * to refuse the request.
   */
  default?: (object: T, ctx: AdmissionContext<T>) => T | void | Promise<T | void>;
  /**
   * Validates a request: return a denial message (or `{ allowed: false, message }`), or
   * throw {@linkcode AdmissionDenied}; anything else allows it.
   */
  validate?: (ctx: AdmissionContext<T>) => ValidationResult | Promise<ValidationResult>;
  /**
   * What the API server does when the webhook cannot be reached or fails.
   * @default "Fail"
   */
  failurePolicy?: "Fail" | "Ignore";
  /**
   * Seconds the API server waits for an answer (1–30).
   * @default 10
   */
  timeoutSeconds?: number;
  /**
   * Declared side effects of the handlers.
   * @default "None"
   */
  sideEffects?: "None" | "NoneOnDryRun";
  /** Only objects in namespaces matching this selector are sent. */
  namespaceSelector?: LabelSelector;
  /** Only objects matching this selector are sent. */
  objectSelector?: LabelSelector;
  /**
   * Operations sent to `validate` (`default` always gets CREATE and UPDATE).
   * @default ["CREATE", "UPDATE"]
   */
  operations?: ValidatedOperation[];
  /**
   * Base of the webhook names: the mutating one is `m<name>`, the validating one `v<name>`.
   * Must be a DNS subdomain with at least three segments.
   * @default `<kind>.<group>` lower-cased (`<kind>.core.kubeno.dev` for the core group)
   */
  name?: string;
  /**
   * Path segment after `/mutate-` and `/validate-`, to serve two admissions of one kind.
   * @default `<group with dots as dashes>-<version>-<kind lower-cased>`
   */
  path?: string;
}

/** One webhook (mutating or validating) of an {@linkcode Admission}. */
export interface WebhookEndpoint {
  /** Webhook name in the configuration, e.g. `vmyapp.apps.kubeno.dev`. */
  name: string;
  /** URL path served, e.g. `/validate-apps-kubeno-dev-v1alpha1-myapp`. */
  path: string;
  /** Operations registered. */
  operations: ValidatedOperation[];
}

/** The admission of one resource, as {@linkcode admission} returns it. */
export interface Admission<T extends KubeObject = KubeObject> {
  /** The resource admitted. */
  readonly resource: Resource<T>;
  /** The mutating webhook, when `default` is set. */
  readonly mutating?: WebhookEndpoint;
  /** The validating webhook, when `validate` is set. */
  readonly validating?: WebhookEndpoint;
  /** The resolved failure policy. */
  readonly failurePolicy: "Fail" | "Ignore";
  /** The resolved timeout in seconds. */
  readonly timeoutSeconds: number;
  /** The resolved side effects. */
  readonly sideEffects: "None" | "NoneOnDryRun";
  /** The namespace selector, if any. */
  readonly namespaceSelector?: LabelSelector;
  /** The object selector, if any. */
  readonly objectSelector?: LabelSelector;
  /**
   * Extra permissions the webhook server needs in the operator's namespace; empty for
   * `admission()`. The Secret holding self-managed certificates is granted by name by the
   * generated manifests.
   */
  readonly rules: readonly PolicyRule[];
  /**
   * This admission's entries of the operator's webhook configurations, pointing at the
   * operator's Service (`operator()` merges them and adds the Service).
   * @param ctx Where the webhook server is reachable.
   * @returns A `ValidatingWebhookConfiguration` and/or a `MutatingWebhookConfiguration`.
   */
  manifests(ctx: WebhookManifestContext): KubeObject[];
  /**
   * Runs `default` on a checked request and answers with the patch.
   * @param request The request.
   * @param signal Aborts at the call's deadline.
   * @returns The response; handler exceptions become denials.
   */
  mutate(request: AdmissionRequest, signal?: AbortSignal): Promise<AdmissionResponse>;
  /**
   * Runs `validate` on a checked request.
   * @param request The request.
   * @param signal Aborts at the call's deadline.
   * @returns The response; handler exceptions become denials.
   */
  validate(request: AdmissionRequest, signal?: AbortSignal): Promise<AdmissionResponse>;
}

/** Options of {@linkcode AdmissionDenied}. */
export interface AdmissionDeniedOptions {
  /**
   * HTTP code reported to the client; its reason follows (422 `Invalid`, 409 `Conflict`…).
   * @default 403 (422 with `fieldErrors`)
   */
  code?: number;
  /**
   * The refused fields: the denial is then 422 `Invalid` with one cause per field.
   * @default []
   */
  fieldErrors?: readonly FieldError[];
  /**
   * Warnings for the client.
   * @default []
   */
  warnings?: string[];
  /** The error that led to the denial. */
  cause?: unknown;
}

/**
 * Thrown by a handler to deny a request with a message (and optional warnings or field
 * errors).
 *
 * @example Denying from a handler
 * ```ts
 * import { AdmissionDenied } from "./admission.ts";
 * const err = new AdmissionDenied("spec.replicas must be at most 100", { warnings: ["big"] });
 * if (err.code !== 403 || err.warnings[0] !== "big") throw new Error();
 * ```
 */
export class AdmissionDenied extends KubenoError {
  /** HTTP code reported to the client. */
  readonly code: number;
  /** Warnings for the client. */
  readonly warnings: string[];
  /** The refused fields, if any. */
  readonly fieldErrors: readonly FieldError[];

  /**
   * Creates the denial.
   *
   * @param message Why the request is denied, shown to the client.
   * @param options `code`, `fieldErrors`, `warnings` and `cause`.
   */
  constructor(message: string, options?: AdmissionDeniedOptions) {
    super(message, { cause: options?.cause });
    this.name = "AdmissionDenied";
    this.fieldErrors = [...(options?.fieldErrors ?? [])];
    this.code = options?.code ?? (this.fieldErrors.length ? 422 : 403);
    this.warnings = options?.warnings ?? [];
  }
}

/**
 * Declares admission webhooks for a resource: `default` becomes a mutating webhook and
 * `validate` a validating one, both typed by the resource's object type. Serve them with
 * `startWebhookServer`, register them with `registerWebhooks` or `webhookManifests`.
 *
 * @param resource The resource to admit (from `defineResource` or a built-in kind).
 * @param options Handlers and registration options.
 * @returns The admission, with its webhook names and paths.
 * @throws {TypeError} When neither handler is given, `name` is not a DNS subdomain with at
 * least three segments, or `timeoutSeconds` is outside 1–30.
 *
 * @example Validate and default ConfigMaps
 * ```ts
 * import { admission } from "./admission.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 *
 * const webhook = admission(ConfigMap, {
 *   default(cm) {
 *     cm.data = { tier: "standard", ...cm.data };
 *   },
 *   validate({ object }) {
 *     if (object?.data?.tier === "gold") return "tier gold is sold out";
 *   },
 * });
 * if (webhook.validating?.path !== "/validate--v1-configmap") throw new Error();
 * const res = await webhook.mutate({
 *   uid: "1",
 *   kind: { group: "", version: "v1", kind: "ConfigMap" },
 *   resource: { group: "", version: "v1", resource: "configmaps" },
 *   operation: "CREATE",
 *   userInfo: {},
 *   object: { metadata: { name: "a" } },
 * });
 * if (!res.allowed || res.patchType !== "JSONPatch") throw new Error();
 * ```
 */
export function admission<T extends KubeObject>(
  resource: Resource<T>,
  options: AdmissionOptions<T>,
): Admission<T> {
  const guard = conversionGuard(resource);
  if (!options.default && !options.validate && !guard) {
    throw new TypeError(`Cannot declare admission for "${resource.kind}": set default or validate`);
  }
  const timeoutSeconds = options.timeoutSeconds ?? 10;
  if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > 30) {
    throw new TypeError(
      `Cannot declare admission for "${resource.kind}": timeoutSeconds ${timeoutSeconds} is not an integer from 1 to 30`,
    );
  }
  let name = options.name ?? `${resource.kind}.${resource.group || "core"}`.toLowerCase();
  if (!options.name && name.split(".").length < 3) name += ".kubeno.dev";
  if (!isDnsSubdomain(name) || name.length > 252 || name.split(".").length < 3) {
    throw new TypeError(
      `Cannot declare admission for "${resource.kind}": name "${name}" must be a DNS subdomain with at least three segments`,
    );
  }
  const segment = options.path ??
    `${resource.group.replaceAll(".", "-")}-${resource.version}-${resource.kind.toLowerCase()}`;
  const { default: defaulter, validate } = options;
  const kindLabel = `${resource.apiVersion}, Kind=${resource.kind}`;

  const self: Admission<T> = {
    resource,
    mutating: defaulter
      ? { name: `m${name}`, path: `/mutate-${segment}`, operations: ["CREATE", "UPDATE"] }
      : undefined,
    validating: validate || guard
      ? {
        name: `v${name}`,
        path: `/validate-${segment}`,
        operations: options.operations ?? ["CREATE", "UPDATE"],
      }
      : undefined,
    failurePolicy: options.failurePolicy ?? "Fail",
    timeoutSeconds,
    sideEffects: options.sideEffects ?? "None",
    namespaceSelector: options.namespaceSelector,
    objectSelector: options.objectSelector,
    // The certificate Secret's permissions are generated by name with the operator's
    // manifests, which know the Secret's name (see deploy/manifests.ts).
    rules: [],

    manifests(ctx) {
      const { validating, mutating } = webhookConfigurations([self], {
        name: ctx.operatorName,
        target: {
          service: { namespace: ctx.namespace, name: ctx.serviceName, port: ctx.servicePort },
        },
        labels: {
          "app.kubernetes.io/name": ctx.operatorName,
          "app.kubernetes.io/managed-by": "kubeno",
        },
      });
      return [...(validating ? [validating] : []), ...(mutating ? [mutating] : [])];
    },

    async mutate(request, signal) {
      const mismatch = checkKind(resource, request);
      if (mismatch) return mismatch;
      if (!defaulter || (request.operation !== "CREATE" && request.operation !== "UPDATE")) {
        return { uid: request.uid, allowed: true };
      }
      const warnings: string[] = [];
      try {
        const ctx = contextOf<T>(request, warnings, signal);
        const working = ctx.object as T;
        const out = await defaulter(working, ctx);
        const patch = diffJson(request.object, out ?? working);
        return {
          uid: request.uid,
          allowed: true,
          ...(patch.length
            ? { patchType: "JSONPatch" as const, patch: base64(JSON.stringify(patch)) }
            : {}),
          ...(warnings.length ? { warnings } : {}),
        };
      } catch (err) {
        return denial(request, err, warnings, `default ${kindLabel}`);
      }
    },

    async validate(request, signal) {
      const mismatch = checkKind(resource, request);
      if (mismatch) return mismatch;
      if (request.operation === "CONNECT") return { uid: request.uid, allowed: true };
      const refused = guard?.(request);
      if (refused) return refused;
      if (!validate) return { uid: request.uid, allowed: true };
      const warnings: string[] = [];
      try {
        const result = await validate(contextOf<T>(request, warnings, signal));
        return resultToResponse(request, result, warnings);
      } catch (err) {
        return denial(request, err, warnings, `validate ${kindLabel}`);
      }
    },
  };
  return self;
}

function contextOf<T>(
  request: AdmissionRequest,
  warnings: string[],
  signal = new AbortController().signal,
): AdmissionContext<T> {
  return {
    operation: request.operation,
    object: request.object == null ? undefined : structuredClone(request.object),
    oldObject: request.oldObject == null ? undefined : structuredClone(request.oldObject),
    dryRun: request.dryRun === true,
    userInfo: request.userInfo,
    request,
    signal,
    warn: (message: string) => void warnings.push(String(message)),
  } as AdmissionContext<T>;
}

/** What the conversion guard needs of a multi-version resource (`defineResource` has it). */
interface MultiVersion {
  readonly versions: readonly string[];
  convert(object: KubeObject, to: string): KubeObject;
  crd(): { spec: { versions: { name: string; served: boolean; storage: boolean }[] } };
}

/**
 * For a multi-version resource, the check that refuses a CREATE or UPDATE whose object does
 * not convert to every other served (or stored) version: stored, such an object would fail
 * every list and watch at that version, for all objects (the API server converts a list as a
 * whole). Undefined for a resource with one version.
 */
function conversionGuard(
  resource: Resource,
): ((request: AdmissionRequest) => AdmissionResponse | undefined) | undefined {
  const r = resource as Partial<MultiVersion>;
  if (typeof r.convert !== "function" || typeof r.crd !== "function") return undefined;
  if ((r.versions?.length ?? 0) < 2) return undefined;
  const targets = r.crd().spec.versions
    .filter((v) => (v.served || v.storage) && v.name !== resource.version)
    .map((v) => `${resource.group}/${v.name}`);
  const convert = r.convert.bind(r);
  return (request) => {
    if (request.operation !== "CREATE" && request.operation !== "UPDATE") return undefined;
    const object = request.object as KubeObject | undefined;
    if (!object?.metadata) return undefined;
    const meta = { ...object.metadata };
    meta.name ||= request.name;
    meta.namespace ||= request.namespace;
    const named = { ...object, metadata: meta };
    for (const to of targets) {
      try {
        convert(named, to);
      } catch (err) {
        const why = err instanceof Error && err.cause instanceof Error ? err.cause.message : err;
        const ref = [meta.namespace, meta.name].filter(Boolean).join("/");
        return {
          uid: request.uid,
          allowed: false,
          status: {
            code: 422,
            reason: "Invalid",
            message: `${resource.kind} "${ref}" cannot be stored: it does not convert to ${to}: ${
              firstLine(why)
            }`,
          },
        };
      }
    }
    return undefined;
  };
}

function checkKind(resource: Resource, request: AdmissionRequest): AdmissionResponse | undefined {
  const k = request.kind;
  if (k.group === resource.group && k.version === resource.version && k.kind === resource.kind) {
    return undefined;
  }
  const got = `${k.group ? `${k.group}/` : ""}${k.version}, Kind=${k.kind}`;
  return {
    uid: request.uid,
    allowed: false,
    status: {
      code: 400,
      reason: "BadRequest",
      message: `Webhook for "${resource.apiVersion}, Kind=${resource.kind}" got "${got}"`,
    },
  };
}

function resultToResponse(
  request: AdmissionRequest,
  result: ValidationResult,
  warnings: string[],
): AdmissionResponse {
  let allowed = true;
  let message: string | undefined;
  let code: number | undefined;
  let fieldErrors: readonly FieldError[] = [];
  if (typeof result === "string") {
    allowed = false;
    message = result;
  } else if (result === false) {
    allowed = false;
  } else if (Array.isArray(result)) {
    fieldErrors = result;
    allowed = result.length === 0;
  } else if (typeof result === "object" && result !== null) {
    const r = result as Exclude<ValidationResult, readonly FieldError[] | void | boolean | string>;
    fieldErrors = r.fieldErrors ?? [];
    allowed = r.allowed ?? fieldErrors.length === 0;
    message = r.message;
    code = r.code;
    if (Array.isArray(r.warnings)) warnings.push(...r.warnings.map(String));
  }
  return {
    uid: request.uid,
    allowed,
    ...(allowed ? {} : { status: denialStatus(request, message, code, fieldErrors) }),
    ...(warnings.length ? { warnings } : {}),
  };
}

/** The Status of a denial: `Invalid` with causes for field errors, else the code's reason. */
function denialStatus(
  request: AdmissionRequest,
  message: string | undefined,
  code: number | undefined,
  fieldErrors: readonly FieldError[],
): NonNullable<AdmissionResponse["status"]> {
  if (fieldErrors.length) {
    const name = request.name || (request.object as KubeObject | undefined)?.metadata?.name || "";
    const status = invalidStatus(request.kind, name, fieldErrors);
    return {
      ...status,
      ...(code ? { code, reason: reasonForCode(code) } : {}),
      ...(message ? { message } : {}),
    };
  }
  const c = code ?? 403;
  return { code: c, reason: reasonForCode(c), message: message || "Denied by the webhook" };
}

function denial(
  request: AdmissionRequest,
  err: unknown,
  warnings: string[],
  what: string,
): AdmissionResponse {
  if (err instanceof AdmissionDenied) {
    warnings.push(...err.warnings);
    return {
      uid: request.uid,
      allowed: false,
      status: denialStatus(
        request,
        err.fieldErrors.length ? undefined : err.message,
        err.code,
        err.fieldErrors,
      ),
      ...(warnings.length ? { warnings } : {}),
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  log.error("Admission handler failed to {what} {namespace}/{name}: {message}", {
    what,
    namespace: request.namespace ?? "",
    name: request.name ?? "",
    message,
    error: err,
  });
  return {
    uid: request.uid,
    allowed: false,
    status: {
      code: 500,
      reason: "InternalError",
      message: `Webhook failed to ${what}: ${message}`,
    },
    ...(warnings.length ? { warnings } : {}),
  };
}

function base64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(bin);
}
