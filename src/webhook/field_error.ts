/**
 * Field errors of a denial, as the API server reports its own validation errors: a validator
 * returns them (or throws `AdmissionDenied` with them) and the client gets `422`, reason
 * `Invalid`, with one `details.causes` entry per field, so that kubectl prints
 * `The CronJob "x" is invalid: spec.schedule: Invalid value: "61 * * * *": …` — what
 * controller-runtime sends for an `apierrors.NewInvalid(gk, name, field.ErrorList)`.
 *
 * The text of each cause is apimachinery's `field.Error.ErrorBody()`: the type's words
 * (`Invalid value`, `Required value`, `Unsupported value`…), the bad value quoted as Go's `%q`
 * quotes a string (numbers and booleans bare), then `: <detail>`.
 *
 * @module
 */

import { statusReasonOf } from "../client/errors/api_error.ts";

/** The kinds of field error the API server uses (apimachinery's `field.ErrorType`). */
export type FieldErrorType =
  | "Invalid"
  | "Required"
  | "Forbidden"
  | "NotSupported"
  | "Duplicate"
  | "TooLong"
  | "TooMany"
  | "NotFound"
  | "Internal";

/** One field a validator refuses. */
export interface FieldError {
  /** The field, e.g. `spec.schedule` or `spec.ports[0].name`. */
  path: string;
  /**
   * What is wrong with it.
   * @default "Invalid"
   */
  type?: FieldErrorType;
  /** The value refused, shown in the message (for `Invalid`, `NotSupported`, `Duplicate`). */
  value?: unknown;
  /** Why, e.g. `must be a valid cron schedule`. */
  detail?: string;
}

/** A `details.causes` entry of a Kubernetes Status. */
export interface StatusCause {
  /** `FieldValueInvalid`, `FieldValueRequired`, … */
  reason: string;
  /** The field path. */
  field: string;
  /** The error's text without the path. */
  message: string;
}

const WORDS: Record<FieldErrorType, [reason: string, words: string, showsValue: boolean]> = {
  Invalid: ["FieldValueInvalid", "Invalid value", true],
  Required: ["FieldValueRequired", "Required value", false],
  Forbidden: ["FieldValueForbidden", "Forbidden", false],
  NotSupported: ["FieldValueNotSupported", "Unsupported value", true],
  Duplicate: ["FieldValueDuplicate", "Duplicate value", true],
  TooLong: ["FieldValueTooLong", "Too long", false],
  TooMany: ["FieldValueTooMany", "Too many", false],
  NotFound: ["FieldValueNotFound", "Not found", true],
  Internal: ["InternalError", "Internal error", false],
};

/**
 * Constructors for {@link FieldError}s, named as apimachinery's `field.Invalid`,
 * `field.Required`…
 *
 * @example Refuse a schedule
 * ```ts
 * import { field } from "./field_error.ts";
 * const err = field.invalid("spec.schedule", "61 * * * *", "minute 61 is out of range");
 * if (err.type !== "Invalid" || err.path !== "spec.schedule") throw new Error();
 * ```
 */
export const field = {
  /**
   * The value is not valid.
   * @param path The field.
   * @param value The value refused.
   * @param detail Why.
   * @returns The field error.
   */
  invalid: (path: string, value: unknown, detail: string): FieldError => ({
    path,
    type: "Invalid",
    value,
    detail,
  }),
  /**
   * The field is missing.
   * @param path The field.
   * @param detail Why it is needed.
   * @returns The field error.
   */
  required: (path: string, detail = ""): FieldError => ({ path, type: "Required", detail }),
  /**
   * The field may not be set (here, or to this).
   * @param path The field.
   * @param detail Why.
   * @returns The field error.
   */
  forbidden: (path: string, detail: string): FieldError => ({ path, type: "Forbidden", detail }),
  /**
   * The value is not one of the supported ones.
   * @param path The field.
   * @param value The value refused.
   * @param supported The values allowed.
   * @returns The field error.
   */
  notSupported: (path: string, value: unknown, supported: readonly string[]): FieldError => ({
    path,
    type: "NotSupported",
    value,
    detail: `supported values: ${supported.map((s) => JSON.stringify(s)).join(", ")}`,
  }),
  /**
   * The value repeats one already in the list.
   * @param path The field.
   * @param value The repeated value.
   * @returns The field error.
   */
  duplicate: (path: string, value: unknown): FieldError => ({ path, type: "Duplicate", value }),
};

/** Go's `%v` of a value as `ErrorBody` prints it: strings quoted, numbers and booleans bare. */
function goValue(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

/**
 * The cause of one field error, worded as apimachinery's `field.Error.ErrorBody()`.
 *
 * @param error The field error.
 * @returns The Status cause.
 * @throws {TypeError} When the type is not a {@link FieldErrorType}.
 *
 * @example The text kubectl shows after the path
 * ```ts
 * import { fieldCause } from "./field_error.ts";
 * const c = fieldCause({ path: "spec.schedule", value: "61 * * * *", detail: "minute out of range" });
 * if (c.message !== 'Invalid value: "61 * * * *": minute out of range') throw new Error(c.message);
 * ```
 */
export function fieldCause(error: FieldError): StatusCause {
  const type = error.type ?? "Invalid";
  const words = WORDS[type];
  if (!words) {
    throw new TypeError(
      `Field error type "${type}" is not one of ${Object.keys(WORDS).join(", ")}`,
    );
  }
  const [reason, text, showsValue] = words;
  let message = showsValue && "value" in error ? `${text}: ${goValue(error.value)}` : text;
  if (error.detail) message += `: ${error.detail}`;
  return { reason, field: String(error.path), message };
}

/**
 * The Status of a denial with field errors, as apimachinery's `apierrors.NewInvalid` builds it:
 * code 422, reason `Invalid`, `details` naming the object and one cause per field, and the
 * message `<Kind>.<group> "<name>" is invalid: <path>: <text>` (several in `[…, …]`).
 *
 * @param kind The object's group and kind.
 * @param name The object's name.
 * @param errors The field errors (at least one).
 * @returns The Status fields of an AdmissionResponse.
 *
 * @example
 * ```ts
 * import { invalidStatus } from "./field_error.ts";
 * const s = invalidStatus({ group: "batch.example.com", kind: "CronJob" }, "x", [
 *   { path: "spec.schedule", value: "61 * * * *", detail: "bad minute" },
 * ]);
 * if (s.message !== 'CronJob.batch.example.com "x" is invalid: spec.schedule: Invalid value: "61 * * * *": bad minute') {
 *   throw new Error(s.message);
 * }
 * ```
 */
export function invalidStatus(
  kind: { group: string; kind: string },
  name: string,
  errors: readonly FieldError[],
): {
  code: 422;
  reason: "Invalid";
  message: string;
  details: { group: string; kind: string; name: string; causes: StatusCause[] };
} {
  const causes = errors.map(fieldCause);
  const texts = causes.map((c) => c.field ? `${c.field}: ${c.message}` : c.message);
  const qualified = kind.group ? `${kind.kind}.${kind.group}` : kind.kind;
  const all = texts.length === 1 ? texts[0] : `[${texts.join(", ")}]`;
  return {
    code: 422,
    reason: "Invalid",
    message: `${qualified} ${JSON.stringify(name)} is invalid: ${all}`,
    details: { group: kind.group, kind: kind.kind, name, causes },
  };
}

/**
 * The Status `reason` the API server uses for an HTTP code, so that a denial with code 422 is
 * `Invalid`, 409 `Conflict`, … (apimachinery's `StatusReason`s).
 *
 * @param code The HTTP code of a denial.
 * @returns The reason.
 *
 * @example
 * ```ts
 * import { reasonForCode } from "./field_error.ts";
 * if (reasonForCode(422) !== "Invalid" || reasonForCode(403) !== "Forbidden") throw new Error();
 * ```
 */
export function reasonForCode(code: number): string {
  return statusReasonOf(code) ?? (code >= 500 ? "InternalError" : "BadRequest");
}
