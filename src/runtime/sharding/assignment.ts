/**
 * `assignShards()`: who should own each virtual shard, given the live replicas and who holds
 * each shard now. Every replica computes it from the Leases it sees, so replicas that see the
 * same Leases agree without talking to each other.
 *
 * ## Guarantees
 *
 * - Balanced: each live replica gets `floor(count / n)` or `ceil(count / n)` shards.
 * - Sticky: a replica keeps the shards it holds, up to its quota (the lowest-numbered
 *   first), so a replica joining or leaving moves only the shards it must.
 * - Deterministic: the same inputs give the same answer on every replica; members with the
 *   same number of held shards are ordered by identity.
 *
 * The assignment says who *should* own a shard. Ownership itself changes only through the
 * shard's Lease: a replica takes a shard that is free or whose holder is gone, and releases
 * one it should not hold after draining it. Replicas that briefly see different Leases may
 * want the same shard; the Lease decides, and they converge once their views agree.
 *
 * @module
 */

/**
 * Assigns `count` shards to `members`.
 *
 * @param count The number of shards.
 * @param members Identities of the live replicas (any order, duplicates ignored).
 * @param holders The current holder of each shard, `undefined` when free; holders that are
 * not members are treated as free.
 * @returns The desired owner of each shard, `undefined` for all when there is no member.
 *
 * @example Three replicas join one after another
 * ```ts
 * import { assignShards } from "./assignment.ts";
 * const one = assignShards(6, ["a"], []);
 * const two = assignShards(6, ["a", "b"], one);
 * const three = assignShards(6, ["a", "b", "c"], two);
 * if (one.join() !== "a,a,a,a,a,a") throw new Error(one.join());
 * if (two.join() !== "a,a,a,b,b,b") throw new Error(two.join()); // a keeps 0-2
 * if (three.join() !== "a,a,c,b,b,c") throw new Error(three.join()); // one from each
 * ```
 */
export function assignShards(
  count: number,
  members: readonly string[],
  holders: readonly (string | undefined)[],
): (string | undefined)[] {
  const ids = [...new Set(members)].sort();
  const desired = new Array<string | undefined>(count).fill(undefined);
  if (!ids.length) return desired;
  const held = new Map<string, number[]>(ids.map((id) => [id, []]));
  for (let i = 0; i < count; i++) {
    const h = holders[i];
    if (h !== undefined) held.get(h)?.push(i);
  }
  // The remainder's extra shard goes to the members holding most, so fewer shards move.
  const byHeld = [...ids].sort((a, b) =>
    held.get(b)!.length - held.get(a)!.length || (a < b ? -1 : a > b ? 1 : 0)
  );
  const base = Math.floor(count / ids.length);
  const extra = count % ids.length;
  const quota = new Map(byHeld.map((id, rank) => [id, base + (rank < extra ? 1 : 0)]));
  const room = new Map<string, number>();
  for (const id of ids) {
    const keep = held.get(id)!.slice(0, quota.get(id));
    for (const i of keep) desired[i] = id;
    room.set(id, quota.get(id)! - keep.length);
  }
  // Free shards, lowest first, fill members in identity order: a fresh start gives each
  // member one contiguous block.
  let m = 0;
  for (let i = 0; i < count; i++) {
    if (desired[i] !== undefined) continue;
    while (room.get(ids[m])! === 0) m++;
    desired[i] = ids[m];
    room.set(ids[m], room.get(ids[m])! - 1);
  }
  return desired;
}
