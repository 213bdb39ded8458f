/**
 * The name rules of Kubernetes (RFC 1123 labels and subdomains, RFC 1035 labels), defined
 * once for every check kubeno makes: operator names, API groups, webhook names, project
 * directories, a CRD's plural and singular names.
 *
 * @module
 */

const LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const LABEL_RE = new RegExp(`^${LABEL}$`);
const SUBDOMAIN_RE = new RegExp(`^${LABEL}(\\.${LABEL})*$`);
const DNS1035_LABEL_RE = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

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

/**
 * Whether `s` is a DNS-1035 label: a DNS-1123 label that starts with a letter (a CRD's
 * plural, singular and short names).
 *
 * @param s The name.
 * @returns Whether it is a DNS-1035 label.
 *
 * @example DNS-1035 labels
 * ```ts
 * import { isDns1035Label } from "./names.ts";
 * if (!isDns1035Label("myapps") || isDns1035Label("1apps") || isDns1035Label("my_apps")) throw new Error();
 * ```
 */
export function isDns1035Label(s: string): boolean {
  return s.length <= 63 && DNS1035_LABEL_RE.test(s);
}
