// A sharded replica's membership: its own member Lease, created on joining, renewed every
// retry period and deleted on leaving; and what it sees of the other members' Leases — when
// each last changed, by the local clock, as client-go's leader election judges expiry — and
// the fence that deletes a silent member's Lease before its shards are taken.
import { getLogger } from "../../util/log.ts";
import type { Clock } from "../../util/clock.ts";
import type { Client } from "../../client/client.ts";
import { isAlreadyExists, isConflict, isNotFound } from "../../client/errors/api_error.ts";
import { Lease } from "../../core/kinds_cluster.ts";
import {
  ANNOTATION_SHARDS,
  LABEL_COUNT,
  LABEL_OF,
  LABEL_ROLE,
  memberLeaseName,
  memberOf,
  microTime,
} from "./_lease.ts";
import { ShardingError } from "./sharding_error.ts";

const log = getLogger(["kubeno", "sharding"]);
const JITTER = 0.2;

/** Timing and identity of a membership; see `ShardingOptions`. */
export interface MembershipOptions {
  client: Client;
  name: string;
  namespace: string;
  identity: string;
  leaseMs: number;
  renewMs: number;
  retryMs: number;
  clock: Clock;
  /** The shards this replica owns now, written to its Lease at each renewal. */
  owned(): (number | string)[];
  /** A renewal succeeded. */
  onRenewed(): void;
}

/** The live members and when the next of them would expire. */
export interface MemberView {
  /** Identities of the live members, this replica included. */
  live: Set<string>;
  /** Each other member's Lease, by identity. */
  leases: Map<string, Lease>;
  /** Clock time the first live member other than this one expires, or Infinity. */
  nextExpiry: number;
}

/** This replica's member Lease and its view of the others'. */
export class Membership {
  readonly leaseName: string;
  readonly #o: MembershipOptions;
  // When each other member's Lease was last seen to change (local clock), by Lease name.
  readonly #seen = new Map<string, { rv: string; at: number }>();
  #lease: Lease | undefined;
  #lastRenew = 0;

  constructor(options: MembershipOptions) {
    this.#o = options;
    this.leaseName = memberLeaseName(options.name, options.identity);
  }

  /** Whether the member Lease was created. */
  get joined(): boolean {
    return this.#lease !== undefined;
  }

  /** Throws when the renewals are overdue. */
  check(): void {
    const since = this.#o.clock.now() - this.#lastRenew;
    if (this.#lease && since > this.#o.leaseMs) {
      throw new ShardingError(
        `Sharding member Lease "${this.leaseName}" not renewed for ${since} ms`,
      );
    }
  }

  /** Records a change of another member's Lease (an informer event). */
  observe(lease: Lease, deleted: boolean): void {
    const member = memberOf(lease);
    if (!member || member === this.#o.identity) return;
    const name = lease.metadata.name!;
    if (deleted) this.#seen.delete(name);
    else if (this.#seen.get(name)?.rv !== lease.metadata.resourceVersion) {
      this.#seen.set(name, { rv: lease.metadata.resourceVersion!, at: this.#o.clock.now() });
    }
  }

  /** The members live now: seen to change within the lease duration. */
  view(leases: readonly Lease[]): MemberView {
    const now = this.#o.clock.now();
    // This replica counts until its renew loop gives up (then it reconciles nothing).
    const live = new Set<string>([this.#o.identity]);
    const byId = new Map<string, Lease>();
    let nextExpiry = Infinity;
    for (const lease of leases) {
      const id = memberOf(lease);
      if (!id || id === this.#o.identity) continue;
      byId.set(id, lease);
      const expires = (this.#seen.get(lease.metadata.name!)?.at ?? now) + this.#o.leaseMs;
      if (expires > now) {
        live.add(id);
        nextExpiry = Math.min(nextExpiry, expires);
      }
    }
    return { live, leases: byId, nextExpiry };
  }

  /**
   * Renews every retry period until the signal aborts or membership is lost.
   *
   * @returns `stopped`, or why membership was lost.
   */
  async run(signal: AbortSignal): Promise<"stopped" | { lost: string }> {
    const o = this.#o;
    for (;;) {
      const started = o.clock.now();
      const result = await this.#renew(signal);
      if (signal.aborted) return "stopped";
      if (result === "ok") {
        this.#lastRenew = started;
        o.onRenewed();
      } else if (result === "fenced") {
        return { lost: `member Lease "${this.leaseName}" was taken over or deleted` };
      } else if (this.#lease && o.clock.now() >= this.#lastRenew + o.renewMs) {
        return { lost: `no renewal of "${this.leaseName}" succeeded for ${o.renewMs} ms` };
      }
      try {
        await o.clock.sleep(o.retryMs * (1 + JITTER * Math.random()), signal);
      } catch {
        return "stopped";
      }
    }
  }

  /** One create-or-renew of the member Lease; never throws. */
  async #renew(signal: AbortSignal): Promise<"ok" | "failed" | "fenced"> {
    const o = this.#o;
    const now = microTime(o.clock.now());
    const owned = o.owned();
    const labels = {
      [LABEL_OF]: o.name,
      [LABEL_ROLE]: "member",
      [LABEL_COUNT]: String(owned.length),
    };
    const annotations = { [ANNOTATION_SHARDS]: owned.join(",") };
    const opts = { namespace: o.namespace, signal };
    try {
      if (!this.#lease) {
        this.#lease = await o.client.create(Lease, {
          metadata: { name: this.leaseName, namespace: o.namespace, labels, annotations },
          spec: {
            holderIdentity: o.identity,
            leaseDurationSeconds: Math.ceil(o.leaseMs / 1000),
            acquireTime: now,
            renewTime: now,
          },
        }, opts);
        log.info("Joined as {identity}: member Lease {lease}", {
          identity: o.identity,
          lease: `${o.namespace}/${this.leaseName}`,
        });
        return "ok";
      }
      const lease = structuredClone(this.#lease);
      lease.metadata.labels = { ...lease.metadata.labels, ...labels };
      lease.metadata.annotations = { ...lease.metadata.annotations, ...annotations };
      lease.spec = { ...lease.spec, renewTime: now };
      this.#lease = await o.client.replace(Lease, lease, opts);
      return "ok";
    } catch (err) {
      if (signal.aborted) return "failed";
      if (isNotFound(err) && this.#lease) return "fenced";
      if (isAlreadyExists(err) || isConflict(err)) {
        // A previous process with this identity left its Lease (a restarted container with a
        // stable identity): adopt it; anyone else's write means this membership is over.
        try {
          const fresh = await o.client.get(Lease, this.leaseName, opts);
          if (fresh.spec?.holderIdentity !== o.identity) return "fenced";
          this.#lease = fresh;
        } catch (e) {
          if (isNotFound(e) && this.#lease) return "fenced";
        }
        return "failed";
      }
      log.warn("Cannot renew member Lease {lease}: {error}", {
        lease: `${o.namespace}/${this.leaseName}`,
        error: err instanceof Error ? err.message : String(err),
      });
      return "failed";
    }
  }

  /**
   * Deletes a silent member's Lease, unless it renewed since it was seen (the
   * `resourceVersion` precondition fails): that member, if alive, loses its membership at its
   * next renewal.
   *
   * @returns Whether its shards may be taken.
   */
  async fence(holder: string, lease: Lease | undefined): Promise<boolean> {
    if (!lease) return true;
    const seen = this.#seen.get(lease.metadata.name!);
    log.warn("Member {holder} has not renewed for {ms} ms; deleting its Lease {lease}", {
      holder,
      ms: seen ? this.#o.clock.now() - seen.at : this.#o.leaseMs,
      lease: lease.metadata.name,
    });
    try {
      await this.#o.client.delete(Lease, lease.metadata.name!, {
        namespace: this.#o.namespace,
        preconditions: { resourceVersion: lease.metadata.resourceVersion },
      });
      return true;
    } catch (err) {
      if (isNotFound(err)) return true;
      log.info("Member {holder} is alive after all: {error}", { holder, error: String(err) });
      return false;
    }
  }

  /** Deletes this replica's member Lease (leaving), unless another took it; never throws. */
  async leave(): Promise<void> {
    let lease = this.#lease;
    const opts = { namespace: this.#o.namespace };
    // A renewal cut short by the stop may still have landed: then the copy is one behind.
    for (let attempt = 0; lease && attempt < 3; attempt++) {
      try {
        await this.#o.client.delete(Lease, this.leaseName, {
          ...opts,
          preconditions: { resourceVersion: lease.metadata.resourceVersion },
        });
        log.info("Left {name}: released every shard and deleted {lease}", {
          name: this.#o.name,
          lease: this.leaseName,
        });
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (!isConflict(err)) {
          log.warn("Cannot delete member Lease: {error}", { error: String(err) });
          return;
        }
        try {
          const fresh = await this.#o.client.get(Lease, this.leaseName, opts);
          lease = fresh.spec?.holderIdentity === this.#o.identity ? fresh : undefined;
        } catch {
          return;
        }
      }
    }
  }
}
