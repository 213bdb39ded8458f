/**
 * The ApplySet convention (KEP-3659) that `kubectl apply --prune --applyset` reads: every
 * member of a set carries the label `applyset.kubernetes.io/part-of: <id>`, and the parent
 * carries `applyset.kubernetes.io/id: <id>` plus annotations naming the tool and the kinds the
 * set may contain. The id is derived from the parent alone, as kubectl derives it, so any tool
 * that knows the parent finds the same members.
 *
 * @module
 */
/** The label on each member of a set: the set's id. */
export const APPLYSET_PART_OF_LABEL = "applyset.kubernetes.io/part-of";
/** The label on the set's parent: the set's id. */
export const APPLYSET_ID_LABEL = "applyset.kubernetes.io/id";
/** The annotation on the parent: the tool that manages the set, `<name>/<version>`. */
export const APPLYSET_TOOLING_ANNOTATION = "applyset.kubernetes.io/tooling";
/** The annotation on the parent: every `Kind.group` the set may contain, sorted, comma-joined. */
export const APPLYSET_GROUP_KINDS_ANNOTATION = "applyset.kubernetes.io/contains-group-kinds";
/**
 * The label on a CustomResourceDefinition whose objects may be ApplySet parents (`"true"`):
 * without it `kubectl apply --prune --applyset=<kind>/<name>` refuses a custom resource parent.
 */
export const APPLYSET_PARENT_TYPE_LABEL = "applyset.kubernetes.io/is-parent-type";

/** The parent of an ApplySet: its name, namespace (none when cluster-scoped), kind and group. */
export interface ApplySetParent {
  /** The parent's `metadata.name`. */
  name: string;
  /** The parent's namespace; empty or absent when cluster-scoped. */
  namespace?: string;
  /** The parent's kind, e.g. `Webapp`. */
  kind: string;
  /** The parent's API group, `""` for the core group. */
  group: string;
}

/**
 * The id of the ApplySet whose parent is `parent`, as KEP-3659 and kubectl compute it:
 * `applyset-` + unpadded base64url of the SHA-256 of `<name>.<namespace>.<kind>.<group>` +
 * `-v1` (a valid label value, 63 characters).
 *
 * @param parent The parent's name, namespace, kind and group.
 * @returns The id, for the parent's `applyset.kubernetes.io/id` label and the members'
 * `applyset.kubernetes.io/part-of` label.
 *
 * @example The id of a Webapp's set
 * ```ts
 * import { applySetId } from "./applyset.ts";
 * const id = await applySetId({ name: "shop", namespace: "prod", kind: "Webapp", group: "apps.kubeno.dev" });
 * if (!/^applyset-[A-Za-z0-9_-]{43}-v1$/.test(id)) throw new Error(id);
 * ```
 */
export async function applySetId(parent: ApplySetParent): Promise<string> {
  const unencoded = [parent.name, parent.namespace ?? "", parent.kind, parent.group].join(".");
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(unencoded));
  return `applyset-${base64Url(new Uint8Array(hash))}-v1`;
}

/** Unpadded base64url (RFC 4648 §5), as Go's `base64.RawURLEncoding`. */
function base64Url(bytes: Uint8Array): string {
  const b64 = btoa(String.fromCharCode(...bytes));
  return b64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/**
 * The value of the `applyset.kubernetes.io/contains-group-kinds` annotation for these kinds:
 * `Kind.group` (just `Kind` for the core group), de-duplicated, sorted, comma-joined.
 *
 * @param kinds The kinds the set may contain.
 * @returns The annotation's value.
 *
 * @example Core and apps kinds
 * ```ts
 * import { applySetGroupKinds } from "./applyset.ts";
 * const v = applySetGroupKinds([{ kind: "Service", group: "" }, { kind: "Deployment", group: "apps" }]);
 * if (v !== "Deployment.apps,Service") throw new Error(v);
 * ```
 */
export function applySetGroupKinds(kinds: readonly { kind: string; group: string }[]): string {
  const gks = kinds.map((k) => k.group ? `${k.kind}.${k.group}` : k.kind);
  return [...new Set(gks)].sort().join(",");
}
