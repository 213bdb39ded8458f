/**
 * The core (`v1`) kinds kubeno's own layers use, and kubeno's helper types around them. The
 * kinds themselves are generated from the API server's OpenAPI (`src/core/api/`, see
 * `deno task gen:kinds`); this module re-exports the common ones so that imports stay short.
 * Every built-in kind, with all its types, is exported from `@kubeno/kubeno/core`.
 *
 * @example A kind is a value and a type
 * ```ts
 * import { ConfigMap } from "./kinds.ts";
 * const cm: ConfigMap = { metadata: { name: "settings" }, data: { mode: "fast" } };
 * if (ConfigMap.plural !== "configmaps" || !cm.data) throw new Error();
 * ```
 *
 * @module
 */
import type { OpenObject } from "./object.ts";

export {
  ConfigMap,
  Event,
  Namespace,
  Node,
  Pod,
  Secret,
  Service,
  ServiceAccount,
} from "./api/core/v1.ts";
export type {
  Container,
  ContainerPort,
  EnvVar,
  PodSpec,
  PodTemplateSpec,
  ServicePort,
} from "./api/core/v1.ts";
export type { LabelSelector } from "./api/meta/v1.ts";

/** A condition as core/v1 and apps/v1 report them (`lastTransitionTime` optional). */
export interface ResourceCondition extends OpenObject {
  /** Condition type, e.g. `Ready` or `Available`. */
  type: string;
  /** `True`, `False` or `Unknown`. */
  status: string;
  /** Machine-readable reason. */
  reason?: string;
  /** Human-readable message. */
  message?: string;
  /** When `status` last changed. */
  lastTransitionTime?: string;
}
