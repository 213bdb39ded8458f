/**
 * The name rules of Kubernetes (RFC 1123 labels and subdomains), defined once for every
 * check kubeno makes: operator names, API groups, webhook names, project directories.
 *
 * @module
 */

const LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const LABEL_RE = new RegExp(`^${LABEL}$`);
const SUBDOMAIN_RE = new RegExp(`^${LABEL}(\\.${LABEL})*$`);

/**
 * Whether `s` is a DNS-1123 label: at most 63 lower-case alphanumerics or `-`, starting and
 * ending with an alphanumeric (a Namespace's or a Service's name).
 *
 * @param s The name.
 * @returns Whether it is a label.
 *
 * @example Labels
 * ```ts
 * import { isDnsLabel } from "./names.ts";
 * if (!isDnsLabel("my-operator") || isDnsLabel("My_Operator") || isDnsLabel("a.b")) throw new Error();
 * ```
 */
export function isDnsLabel(s: string): boolean {
  return s.length <= 63 && LABEL_RE.test(s);
}

/**
 * Whether `s` is a DNS-1123 subdomain: labels joined by dots, at most 253 characters (an
 * API group's or a webhook's name).
 *
 * @param s The name.
 * @returns Whether it is a subdomain.
 *
 * @example Subdomains
 * ```ts
 * import { isDnsSubdomain } from "./names.ts";
 * if (!isDnsSubdomain("apps.example.com") || isDnsSubdomain("Apps.example.com")) throw new Error();
 * ```
 */
export function isDnsSubdomain(s: string): boolean {
  return s.length <= 253 && SUBDOMAIN_RE.test(s);
}
