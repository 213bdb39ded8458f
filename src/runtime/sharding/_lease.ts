// The Leases of a sharded operator, as `kubectl get leases` shows them: one per replica
// (`<name>-member-<identity>`, held and renewed by that replica) and one per virtual shard
// (`<name>-shard-<nn>`, held by the replica that owns the shard). Labels make the set easy to
// select and read: `kubectl get leases -l shards.kubeno.dev/of=<name> -L
// shards.kubeno.dev/range,shards.kubeno.dev/count`.
import type { Lease } from "../../core/kinds_cluster.ts";

/** Label naming the operator a Lease belongs to. */
export const LABEL_OF = "shards.kubeno.dev/of";
/** Label: `member` or `shard`. */
export const LABEL_ROLE = "shards.kubeno.dev/role";
/** Label of a shard Lease: its index. */
export const LABEL_SHARD = "shards.kubeno.dev/shard";
/** Label of a shard Lease: its hash range, `start-end` in hex. */
export const LABEL_RANGE = "shards.kubeno.dev/range";
/** Label of a member Lease: how many shards the replica reconciles. */
export const LABEL_COUNT = "shards.kubeno.dev/count";
/** Annotation of a member Lease: the shards the replica reconciles, e.g. `0,1,2,3`. */
export const ANNOTATION_SHARDS = "shards.kubeno.dev/shards";

/** The name of shard `i`'s Lease: `<name>-shard-07`. */
export function shardLeaseName(name: string, i: number, count: number): string {
  return `${name}-shard-${String(i).padStart(String(count - 1).length, "0")}`;
}

/** Annotation of a named shard's Lease (`ShardCoordinatorOptions.named`): the shard's name. */
export const ANNOTATION_NAME = "shards.kubeno.dev/name";

/**
 * The name of a named shard's Lease: `<name>-named-<name as a DNS name>-<8 hex of its FNV-1a>`,
 * the hash keeping names that slug alike apart.
 */
export function namedLeaseName(name: string, shard: string): string {
  let h = 0x811c9dc5;
  for (const b of new TextEncoder().encode(shard)) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  const slug = shard.toLowerCase().replace(/[^a-z0-9-]+/g, "-").slice(0, 60).replace(
    /^-+|-+$/g,
    "",
  );
  return `${name}-named-${slug || "x"}-${h.toString(16).padStart(8, "0")}`;
}

/** The name of a replica's member Lease: `<name>-member-<identity as a DNS name>`. */
export function memberLeaseName(name: string, identity: string): string {
  const slug = identity.toLowerCase().replace(/[^a-z0-9.-]+/g, "-").replace(/^[-.]+|[-.]+$/g, "");
  return `${name}-member-${slug || "replica"}`.slice(0, 253).replace(/[-.]+$/, "");
}

/** Whether a Lease is a member Lease, and whose. */
export function memberOf(lease: Lease): string | undefined {
  if (lease.metadata.labels?.[LABEL_ROLE] !== "member") return undefined;
  return lease.spec?.holderIdentity || undefined;
}

/** The shard index of a shard Lease, or undefined. */
export function shardOfLease(lease: Lease, count: number): number | undefined {
  if (lease.metadata.labels?.[LABEL_ROLE] !== "shard") return undefined;
  const i = Number(lease.metadata.labels?.[LABEL_SHARD]);
  return Number.isInteger(i) && i >= 0 && i < count ? i : undefined;
}

/** `metav1.MicroTime`: RFC 3339 with six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** A replica's identity when none is given: host name and a random suffix, unique per process. */
export function defaultIdentity(): string {
  let host = "kubeno";
  try {
    host = Deno.hostname();
  } catch { /* no --allow-sys */ }
  return `${host}-${crypto.randomUUID().slice(0, 8)}`;
}
