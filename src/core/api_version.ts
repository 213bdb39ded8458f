/**
 * An `apiVersion` is `group/version`, or just `version` for the core group (`v1`). This
 * module is the one place that takes one apart.
 *
 * @module
 */

/** The two parts of an `apiVersion`. */
export interface GroupVersion {
  /** API group; `""` for the core group. */
  group: string;
  /** API version, e.g. `v1`. */
  version: string;
}

/**
 * The group and version of an `apiVersion`: everything before the first `/` is the group;
 * without a `/` the group is the core group, `""`. It never throws: a malformed value gives
 * parts that match no kind.
 *
 * @param apiVersion E.g. `apps/v1` or `v1`.
 * @returns Its group and version.
 *
 * @example Taking apiVersions apart
 * ```ts
 * import { parseApiVersion } from "./api_version.ts";
 * const apps = parseApiVersion("apps/v1");
 * if (apps.group !== "apps" || apps.version !== "v1") throw new Error();
 * const core = parseApiVersion("v1");
 * if (core.group !== "" || core.version !== "v1") throw new Error();
 * ```
 */
export function parseApiVersion(apiVersion: string): GroupVersion {
  const slash = apiVersion.indexOf("/");
  return slash < 0
    ? { group: "", version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/**
 * The group of an `apiVersion`, as {@linkcode parseApiVersion} finds it.
 *
 * @param apiVersion E.g. `apps/v1` or `v1`.
 * @returns The group; `""` for the core group.
 *
 * @example The group of an owner reference
 * ```ts
 * import { groupOf } from "./api_version.ts";
 * if (groupOf("apps.kubeno.dev/v1") !== "apps.kubeno.dev") throw new Error();
 * if (groupOf("v1") !== "") throw new Error();
 * ```
 */
export function groupOf(apiVersion: string): string {
  return parseApiVersion(apiVersion).group;
}
