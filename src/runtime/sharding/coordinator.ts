/**
 * `ShardCoordinator`: N replicas of an operator share its objects, with no leader, through
 * Leases. The hash space (64-bit FNV-1a of each object's uid or namespace, as the API
 * server's sharded list and watch computes it) is cut into a fixed number of virtual shards;
 * each shard has a Lease naming the replica that owns it, and each replica a member Lease it
 * renews. Informers given {@linkcode ShardCoordinator.prototype.filter} cache only the owned
 * shards, asking the server for them with `shardSelector`.
 *
 * ## Flow
 *
 * 1. Join: create this replica's member Lease and renew it every `retryPeriodMs`; watch the
 *    operator's Leases (one label-selected watch).
 * 2. Assign: live members are those whose member Lease was seen to change within
 *    `leaseDurationMs` (judged by the local clock, as client-go's leader election does).
 *    Every replica computes the same balanced, sticky assignment from them
 *    (`assignShards`).
 * 3. Hand off a shard this replica should no longer own: stop caching it (its objects leave
 *    the informers, so no new reconcile of them starts), wait until no reconcile of one of
 *    its objects is in flight (`drain`), then write an empty holder to its Lease.
 * 4. Take a shard this replica should own once its Lease is free: empty, or held by a member
 *    that stopped renewing — that member's Lease is first deleted with a `resourceVersion`
 *    precondition, which fails if it renewed meanwhile. The take is an update guarded by the
 *    shard Lease's `resourceVersion`; then the informers list and watch the shard.
 *
 * ## Guarantees
 *
 * - One owner per shard: a shard changes hands only through its Lease, after the previous
 *   owner drained it or was fenced.
 * - No object is reconciled by two replicas at once: a replica starts a shard's objects only
 *   after taking its Lease, and gives the Lease up only after its reconciles of them ended.
 *   A replica that cannot renew its member Lease for `renewDeadlineMs` stops reconciling at
 *   once (`onLost`; `run` exits the process), before others may take its shards after
 *   `leaseDurationMs`; a replica whose member Lease was deleted stops at its next renewal.
 * - A dead replica's shards move within `leaseDurationMs` of its last renewal, plus the
 *   time to write the Leases.
 *
 * ## Caveats
 *
 * As with leader election there is no fencing of writes already sent: a replica stalled for
 * longer than `leaseDurationMs - renewDeadlineMs` may finish a write after its shards moved.
 * Clock rates (not offsets) across machines must agree.
 *
 * ## Errors
 *
 * API failures are logged and retried; `run` resolves `"lost"` when membership is lost and
 * `"stopped"` when its signal aborts (after releasing every shard and leaving).
 *
 * @module
 */
import { getLogger } from "../../util/log.ts";
import { inSpan } from "../../util/trace.ts";
import { type Clock, realClock, type TimerId } from "../../util/clock.ts";
import type { Client } from "../../client/client.ts";
import { isAlreadyExists, isConflict, isNotFound } from "../../client/errors/api_error.ts";
import { Lease } from "../../core/kinds_cluster.ts";
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import { Informer } from "../cache/informer.ts";
import type { ShardFilter } from "../cache/shard_filter.ts";
import { assignShards } from "./assignment.ts";
import { rangeLabel, type ShardKey, shardOf, shardRanges, shardSelector } from "./hash_range.ts";
import {
  ANNOTATION_NAME,
  defaultIdentity,
  LABEL_OF,
  LABEL_RANGE,
  LABEL_ROLE,
  LABEL_SHARD,
  microTime,
  namedLeaseName,
  shardLeaseName,
  shardOfLease,
} from "./_lease.ts";

/**
 * A replica's identity when none is given, as the coordinator picks it: the host name and a
 * random suffix, unique per process.
 */
export const replicaIdentity: () => string = defaultIdentity;
import { Membership } from "./_membership.ts";
import { ShardingError } from "./sharding_error.ts";

const log = getLogger(["kubeno", "sharding"]);
const JITTER = 0.2;

/**
 * The number of virtual shards when none is given: 12 divides evenly among 1, 2, 3, 4 and 6.
 *
 * @experimental **UNSTABLE**: rests on the alpha `ShardedListAndWatch` feature (KEP-5866).
 */
export const DEFAULT_SHARDS = 12;

/**
 * How an operator shards its objects: `operator({ sharding })` and the manager take it.
 *
 * @experimental **UNSTABLE**: rests on the alpha `ShardedListAndWatch` feature (KEP-5866).
 */
export interface ShardingOptions {
  /**
   * Virtual shards the hash space is cut into; choose a multiple of the replica counts you
   * run (12 divides evenly among 1, 2, 3, 4 and 6), at least a few per replica.
   * @default 12
   */
  shards?: number;
  /**
   * What an object's shard is computed from. `"uid"` spreads objects evenly whatever their
   * namespaces; children are then cached by every replica (the server cannot filter them by
   * their owner) and only mapped to their owner's shard. `"namespace"` keeps a namespace's
   * objects together: primaries and the children they own in their namespace share one
   * shard, so both caches split; it balances only over many namespaces of similar size, and
   * cannot split cluster-scoped kinds.
   * @default "uid"
   */
  key?: ShardKey;
  /**
   * Prefix of the Lease names, and the `shards.kubeno.dev/of` label.
   * @default the operator's name
   */
  name?: string;
  /**
   * Namespace of the Leases.
   * @default the operator's namespace
   */
  namespace?: string;
  /**
   * This replica's identity, unique among replicas (the pod name, say).
   * @default the host name and a random suffix
   */
  identity?: string;
  /**
   * How long others wait without seeing a replica renew before they take its shards.
   * @default 15_000
   */
  leaseDurationMs?: number;
  /**
   * How long a replica retries a failed renewal before it stops reconciling.
   * @default 10_000
   */
  renewDeadlineMs?: number;
  /**
   * Time between renewals of the member Lease.
   * @default 2_000
   */
  retryPeriodMs?: number;
}

/**
 * Hooks that feed the sharding metrics (`src/metrics/sharding_metrics.ts`).
 *
 * @experimental **UNSTABLE**: rests on the alpha `ShardedListAndWatch` feature (KEP-5866).
 */
export interface ShardingMetrics {
  /** The shards this replica reconciles changed. */
  owned?(shards: readonly number[]): void;
  /** The live members seen changed. */
  members?(count: number): void;
  /**
   * A shard changed hands here: `acquired` (it was free), `took-over` (its holder stopped
   * renewing) or `released` (after `drainSeconds` of draining).
   */
  handoff?(kind: "acquired" | "took-over" | "released", shard: number, drainSeconds?: number): void;
  /** The API server ignored the shard selector for a kind: filtering on the client. */
  clientSideFiltering?(resource: Resource<any>): void;
  /** An object arrived at a sharded informer; `kept` when it is in this replica's shards. */
  received?(kept: boolean): void;
}

/**
 * Options of {@linkcode ShardCoordinator}.
 *
 * @experimental **UNSTABLE**: rests on the alpha `ShardedListAndWatch` feature (KEP-5866).
 */
export interface ShardCoordinatorOptions extends ShardingOptions {
  /** Reads, watches and writes the Leases. */
  client: Client;
  /** Prefix of the Lease names. */
  name: string;
  /**
   * Waits until no reconcile of an object matching `inShards` is in flight; called before a
   * shard is given up, after its objects left the caches.
   * @default resolves at once
   */
  drain?(inShards: (obj: KubeObject) => boolean): Promise<void>;
  /** Called once, at once, when membership is lost: stop writing now. */
  onLost?(reason: string): void;
  /** Metric hooks. */
  metrics?: ShardingMetrics;
  /**
   * Named shards instead of hash ranges: one shard (and Lease) per name that `keys` returns
   * now, an object's shard being its `metadata.name`; the names are balanced over the
   * replicas as shards are (each gets ⌊n/r⌋ or ⌈n/r⌉) and stay with their owner while it
   * lives. Nothing is filtered on the server (`filter.selector` stays null). Every replica
   * must see the same names; call {@linkcode ShardCoordinator.prototype.refresh} when they
   * change. A fleet spreads its clusters this way.
   * @default hash ranges, `shards` of them
   */
  named?: { keys(): readonly string[] };
  /**
   * Time source for renewals and expiry.
   * @default realClock
   */
  clock?: Clock;
}

/**
 * Why {@linkcode ShardCoordinator.prototype.run} ended.
 *
 * @experimental **UNSTABLE**: rests on the alpha `ShardedListAndWatch` feature (KEP-5866).
 */
export type ShardingEnd = "lost" | "stopped";

/**
 * Coordinates this replica's share of a sharded operator. See the module docs.
 *
 * @example Caching one replica's share of ConfigMaps
 * ```ts ignore — needs a live API server for the Leases
 * import { ShardCoordinator } from "./coordinator.ts";
 * import { informer } from "../cache/informer.ts";
 * import { createClient } from "../../client/client.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 *
 * const client = await createClient();
 * const shards = new ShardCoordinator({ client, name: "cm-operator", namespace: "default" });
 * const cms = informer(ConfigMap, { client, shard: shards.filter }).start();
 * const stop = new AbortController();
 * const running = shards.run(stop.signal);
 * // ... later:
 * stop.abort();
 * await running;
 * await cms.stop();
 * ```
 *
 * @experimental **UNSTABLE**: rests on the alpha `ShardedListAndWatch` feature (KEP-5866).
 */
export class ShardCoordinator {
  /** This replica's identity. */
  readonly identity: string;
  /** The number of virtual shards. */
  readonly count: number;
  /** What objects are sharded by. */
  readonly key: ShardKey;
  /** Prefix of the Lease names. */
  readonly name: string;
  /** Namespace of the Leases. */
  readonly namespace: string;
  readonly #o: ShardCoordinatorOptions;
  readonly #client: Client;
  readonly #clock: Clock;
  readonly #membership: Membership;
  readonly #listeners = new Set<() => void>();
  readonly #unfiltered = new Set<string>();
  // Shards whose Lease names this replica (as last written by it), and the ones it caches.
  // Shard ids: the index as a string, or the name with `named`.
  readonly #held = new Set<string>();
  #active = new Set<string>();
  readonly #filter: { -readonly [K in keyof ShardFilter]: ShardFilter[K] };
  #leases: Informer<Lease> | undefined;
  #members: string[] = [];
  #lost: string | undefined;
  #stopping = false;
  #evaluating: Promise<void> | undefined;
  #again = false;
  #timer: TimerId | undefined;
  #running: Promise<ShardingEnd> | undefined;

  /**
   * Creates a coordinator; nothing happens until {@linkcode ShardCoordinator.prototype.run}.
   *
   * @param options Client, Lease names, identity, shards, key, timings and hooks.
   * @throws {RangeError} When `shards` is not 1-4096, or the timings do not satisfy
   * lease duration > renew deadline > 1.2 × retry period > 0.
   * @throws {TypeError} When `name` or `identity` is empty.
   */
  constructor(options: ShardCoordinatorOptions) {
    this.#o = options;
    this.#client = options.client;
    this.#clock = options.clock ?? realClock;
    this.name = options.name;
    this.namespace = options.namespace ?? "default";
    this.identity = options.identity ?? defaultIdentity();
    this.count = options.shards ?? DEFAULT_SHARDS;
    this.key = options.key ?? "uid";
    if (!this.name) throw new TypeError("Cannot shard: the Lease name is empty");
    if (!this.identity) throw new TypeError("Cannot shard: the replica identity is empty");
    shardRanges(this.count); // validates the count
    if (this.key !== "uid" && this.key !== "namespace") {
      throw new RangeError(`Cannot shard by "${this.key}": use "uid" or "namespace"`);
    }
    const leaseMs = options.leaseDurationMs ?? 15_000;
    const renewMs = options.renewDeadlineMs ?? 10_000;
    const retryMs = options.retryPeriodMs ?? 2_000;
    if (!(retryMs > 0 && renewMs > (1 + JITTER) * retryMs && leaseMs > renewMs)) {
      throw new RangeError(
        `Cannot shard: need lease duration > renew deadline > 1.2 × retry period > 0, got ` +
          `"${leaseMs}", "${renewMs}", "${retryMs}" ms`,
      );
    }
    this.#membership = new Membership({
      client: this.#client,
      name: this.name,
      namespace: this.namespace,
      identity: this.identity,
      leaseMs,
      renewMs,
      retryMs,
      clock: this.#clock,
      owned: () => this.#o.named ? this.ownedNames : this.owned,
      onRenewed: () => this.#kick(),
    });
    this.#filter = {
      selector: null,
      matches: (obj) => this.#active.has(this.#idOf(obj)),
      subscribe: (listener) => {
        this.#listeners.add(listener);
        return () => this.#listeners.delete(listener);
      },
      unfiltered: (resource, reason) => this.#unfilteredBy(resource, reason),
      received: (_resource, kept) => this.#o.metrics?.received?.(kept),
    };
  }

  /**
   * The live share, for informers (`InformerOptions.shard`): the owned shards' selector, the
   * same test on the client, and a change notice when shards move.
   *
   * @returns The filter.
   */
  get filter(): ShardFilter {
    return this.#filter;
  }

  #unfilteredBy(resource: Resource<any>, reason: "no-shard-info" | "foreign-object"): void {
    const what = `${resource.apiVersion}/${resource.kind}:${reason}`;
    if (this.#unfiltered.has(what)) return;
    this.#unfiltered.add(what);
    const props = { kind: resource.kind, apiVersion: resource.apiVersion };
    if (reason === "no-shard-info") {
      // Not proof: Kubernetes 1.37 filters custom resources' lists without echoing shardInfo.
      log.info(
        "The API server's list of {kind} carried no shardInfo; checking every {kind} on the " +
          "client by the same hash (it says so if the server sends objects of other shards)",
        props,
      );
      return;
    }
    log.warn(
      "The API server ignored the shard selector for {kind}: it lacks the ShardedListAndWatch " +
        "feature (Kubernetes 1.36+, alpha, --feature-gates=ShardedListAndWatch=true); " +
        "filtering on the client by the same hash, so every replica receives every {kind}",
      props,
    );
    this.#o.metrics?.clientSideFiltering?.(resource);
  }

  /**
   * The shard an object belongs to.
   *
   * @param obj The object (its uid or namespace is read).
   * @returns The shard index.
   */
  shardOf(obj: KubeObject): number {
    return shardOf(obj, this.key, this.count);
  }

  /**
   * The shards this replica caches and reconciles now, ascending.
   *
   * @returns The shard indexes (none with `named`; see `ownedNames`).
   */
  get owned(): number[] {
    if (this.#o.named) return [];
    return [...this.#active].map(Number).sort((a, b) => a - b);
  }

  /**
   * With `named`, the names this replica owns now, sorted.
   *
   * @returns The names (none without `named`).
   */
  get ownedNames(): string[] {
    return this.#o.named ? [...this.#active].sort() : [];
  }

  /** Evaluates the assignment again soon, e.g. after `named`'s names changed. */
  refresh(): void {
    this.#kick();
  }

  /** The shard ids now: `0..count-1`, or the sorted names. */
  #ids(): string[] {
    if (!this.#o.named) return Array.from({ length: this.count }, (_, i) => String(i));
    return [...new Set(this.#o.named.keys())].sort();
  }

  #idOf(obj: KubeObject): string {
    return this.#o.named ? obj.metadata.name ?? "" : String(this.shardOf(obj));
  }

  #idOfLease(lease: Lease): string | undefined {
    if (!this.#o.named) {
      const i = shardOfLease(lease, this.count);
      return i === undefined ? undefined : String(i);
    }
    if (lease.metadata.labels?.[LABEL_ROLE] !== "shard") return undefined;
    return lease.metadata.annotations?.[ANNOTATION_NAME] || undefined;
  }

  #leaseName(id: string): string {
    return this.#o.named
      ? namedLeaseName(this.name, id)
      : shardLeaseName(this.name, Number(id), this.count);
  }

  /**
   * The live members at the last evaluation, this replica included once it joined.
   *
   * @returns Their identities, sorted.
   */
  get members(): readonly string[] {
    return this.#members;
  }

  /**
   * Kinds whose API server was seen ignoring the shard selector (filtered on the client).
   *
   * @returns `apiVersion/Kind` of each.
   */
  get clientSideFiltered(): string[] {
    return [...this.#unfiltered].filter((w) => w.endsWith(":foreign-object")).map((w) =>
      w.slice(0, w.lastIndexOf(":"))
    );
  }

  /**
   * A liveness check: fails when membership was lost or renewals are overdue.
   *
   * @throws {ShardingError} When this replica cannot count on its membership.
   */
  check(): void {
    if (this.#lost) throw new ShardingError(`Sharding membership lost: ${this.#lost}`);
    this.#membership.check();
  }

  /**
   * Joins, takes and hands off shards until `signal` aborts or membership is lost. On abort
   * it releases every shard it holds and deletes its member Lease; stop reconciling (drain)
   * before aborting.
   *
   * @param signal Stops and leaves.
   * @returns How it ended.
   * @throws {ShardingError} When called twice.
   */
  run(signal: AbortSignal): Promise<ShardingEnd> {
    if (this.#running) throw new ShardingError(`Cannot run shard coordinator "${this.name}" twice`);
    this.#running = this.#run(signal);
    return this.#running;
  }

  async #run(signal: AbortSignal): Promise<ShardingEnd> {
    log.info("Joining {count} shards of {name} as {identity} (Leases in {namespace})", {
      count: this.count,
      name: this.name,
      identity: this.identity,
      namespace: this.namespace,
    });
    const leases = new Informer(Lease, {
      client: this.#client,
      namespace: this.namespace,
      labelSelector: `${LABEL_OF}=${this.name}`,
    });
    this.#leases = leases;
    leases.onEvent((ev) => {
      this.#membership.observe(ev.object, ev.type === "deleted");
      this.#kick();
    });
    leases.start();
    // The first list's events reach the handler before the informer counts as synced, and
    // #evaluate waits for that: evaluate once more when it does, not a renewal later.
    leases.synced({ signal }).then(() => this.#kick(), () => {});
    try {
      const end = await this.#membership.run(signal);
      if (end !== "stopped") return this.#lose(end.lost);
      await this.#leave();
      return "stopped";
    } finally {
      this.#stopping = true;
      if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
      await this.#evaluating;
      await leases.stop();
    }
  }

  #lose(reason: string): "lost" {
    this.#lost = reason;
    log.error("Lost sharding membership of {identity}: {reason}; reconciling nothing", {
      identity: this.identity,
      reason,
    });
    this.#setActive(new Set());
    try {
      this.#o.onLost?.(reason);
    } catch (err) {
      log.error("onLost failed: {error}", { error: String(err) });
    }
    return "lost";
  }

  /** Runs an evaluation soon; one at a time, and one more if asked meanwhile. */
  #kick(): void {
    if (this.#stopping || this.#lost) return;
    if (this.#evaluating) {
      this.#again = true;
      return;
    }
    this.#evaluating = (async () => {
      try {
        do {
          this.#again = false;
          await this.#evaluate();
        } while (this.#again && !this.#stopping && !this.#lost);
      } catch (err) {
        log.error("Shard evaluation failed: {error}", { error: String(err) });
      } finally {
        this.#evaluating = undefined;
      }
    })();
  }

  async #evaluate(): Promise<void> {
    const leases = this.#leases;
    if (!this.#membership.joined || !leases?.hasSynced || this.#stopping || this.#lost) return;
    const { live, leases: memberLeases, nextExpiry } = this.#membership.view(leases.list());
    this.#scheduleExpiry(nextExpiry);
    const members = [...live].sort();
    if (members.join() !== this.#members.join()) {
      log.info("Members of {name}: {members}", { name: this.name, members });
      this.#o.metrics?.members?.(members.length);
    }
    this.#members = members;
    const ids = this.#ids();
    const index = new Map(ids.map((id, i) => [id, i]));
    const shardLeases: (Lease | undefined)[] = new Array(ids.length);
    for (const lease of leases.list()) {
      const id = this.#idOfLease(lease);
      const i = id === undefined ? undefined : index.get(id);
      if (i !== undefined) shardLeases[i] = lease;
    }
    const holders = shardLeases.map((l) => l?.spec?.holderIdentity || undefined);
    const desired = assignShards(
      ids.length,
      members,
      holders.map((h) => (h && live.has(h) ? h : undefined)),
    );
    const release = [...this.#held].filter((id) => {
      const i = index.get(id);
      return i === undefined || desired[i] !== this.identity;
    });
    if (release.length) await this.#release(release);
    if (this.#stopping || this.#lost) return;
    // Fence each silent holder once, then take every wanted shard at once, so that the
    // informers list the new shards together.
    const fenced = new Map<string, Promise<boolean>>();
    const wanted: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      if (desired[i] !== this.identity || this.#held.has(ids[i])) continue;
      const holder = holders[i];
      if (holder && holder !== this.identity && live.has(holder)) continue; // it will release
      if (holder && holder !== this.identity && !fenced.has(holder)) {
        fenced.set(holder, this.#membership.fence(holder, memberLeases.get(holder)));
      }
      wanted.push(i);
    }
    const gained = new Set<string>();
    await Promise.all(wanted.map(async (i) => {
      const holder = holders[i];
      const other = holder && holder !== this.identity ? holder : undefined;
      if (other && !(await fenced.get(other))) return;
      if (this.#stopping || this.#lost) return;
      const took = await inSpan("shard take", () => ({
        ...this.#spanAttributes(ids[i]),
        "kubeno.shard.from": other,
      }), () => this.#take(ids[i], shardLeases[i]));
      if (!took) return;
      gained.add(ids[i]);
      this.#o.metrics?.handoff?.(other ? "took-over" : "acquired", this.#o.named ? -1 : i);
      if (other) {
        log.warn("Took over shard {shard} from {holder}, which stopped renewing", {
          shard: ids[i],
          holder: other,
        });
      }
    }));
    if (this.#stopping || this.#lost) return;
    if (gained.size) this.#setActive(new Set([...this.#active, ...gained]));
  }

  #scheduleExpiry(at: number): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (at === Infinity || this.#stopping) return;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.#kick();
    }, Math.max(0, at - this.#clock.now()) + 1);
  }

  /** Takes a shard's Lease (creating it when missing); guarded by its resourceVersion. */
  async #take(i: string, lease: Lease | undefined): Promise<boolean> {
    const now = microTime(this.#clock.now());
    const named = this.#o.named !== undefined;
    const range = named ? undefined : shardRanges(this.count)[Number(i)];
    const metadata = {
      name: this.#leaseName(i),
      namespace: this.namespace,
      labels: {
        [LABEL_OF]: this.name,
        [LABEL_ROLE]: "shard",
        ...(range ? { [LABEL_SHARD]: i, [LABEL_RANGE]: rangeLabel(range) } : {}),
      },
      ...(named ? { annotations: { [ANNOTATION_NAME]: i } } : {}),
    };
    const spec = {
      holderIdentity: this.identity,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: (lease?.spec?.leaseTransitions ?? -1) + 1,
    };
    try {
      if (!lease) {
        await this.#client.create(Lease, { metadata, spec }, { namespace: this.namespace });
      } else {
        const next = structuredClone(lease);
        next.spec = { ...next.spec, ...spec };
        await this.#client.replace(Lease, next, { namespace: this.namespace });
      }
      this.#held.add(i);
      log.info("Acquired shard {shard} ({range}) as {identity}", {
        shard: i,
        range: range ? rangeLabel(range) : "named",
        identity: this.identity,
      });
      return true;
    } catch (err) {
      const level = isConflict(err) || isAlreadyExists(err) ? "debug" : "warn";
      log[level]("Cannot take shard {shard}: {error}", { shard: i, error: String(err) });
      return false;
    }
  }

  /** Stops caching shards, waits for their reconciles, then frees their Leases. */
  async #release(shards: string[]): Promise<void> {
    const set = new Set(shards);
    this.#setActive(new Set([...this.#active].filter((i) => !set.has(i))));
    // The drain and the Leases' release in one span; the share left the cache before it.
    await inSpan("shard release", () => ({
      ...this.#spanAttributes(),
      "kubeno.shards": shards.join(","),
    }), () => this.#drainAndFree(shards, set));
  }

  async #drainAndFree(shards: string[], set: Set<string>): Promise<void> {
    const started = this.#clock.now();
    await this.#o.drain?.((obj) => set.has(this.#idOf(obj)));
    const drainSeconds = (this.#clock.now() - started) / 1000;
    if (this.#lost) return;
    await Promise.all(shards.map(async (i) => {
      if (!(await this.#free(i))) return;
      this.#held.delete(i);
      this.#o.metrics?.handoff?.("released", this.#o.named ? -1 : Number(i), drainSeconds);
      log.info("Released shard {shard} after draining for {ms} ms", {
        shard: i,
        ms: Math.round(drainSeconds * 1000),
      });
    }));
  }

  #spanAttributes(shard?: number | string): Record<string, string | number | undefined> {
    return {
      "kubeno.sharding.name": this.name,
      "kubeno.sharding.identity": this.identity,
      "kubeno.shard": shard,
    };
  }

  /** Writes an empty holder to a shard Lease this replica holds. */
  async #free(i: string): Promise<boolean> {
    const name = this.#leaseName(i);
    const opts = { namespace: this.namespace };
    if (this.#o.named && !this.#stopping && !this.#ids().includes(i)) {
      // A name no longer given (a cluster gone): its Lease goes with it.
      try {
        await this.#client.delete(Lease, name, opts);
        return true;
      } catch (err) {
        if (isNotFound(err)) return true;
        log.warn("Cannot delete the Lease of shard {shard}: {error}", {
          shard: i,
          error: String(err),
        });
        return false;
      }
    }
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        // The cache is trusted only when it says the Lease is ours (a stale copy then meets a
        // conflict); that it is someone else's may just mean it has not shown this replica's
        // own take yet, so the server is asked.
        const cached = attempt === 0
          ? this.#leases?.get({ name, namespace: this.namespace })
          : undefined;
        const lease = cached?.spec?.holderIdentity === this.identity
          ? structuredClone(cached)
          : await this.#client.get(Lease, name, opts);
        if (lease.spec?.holderIdentity !== this.identity) return true;
        lease.spec = { ...lease.spec, holderIdentity: "", renewTime: microTime(this.#clock.now()) };
        await this.#client.replace(Lease, lease, opts);
        return true;
      } catch (err) {
        if (isNotFound(err)) return true;
        if (!isConflict(err)) {
          log.warn("Cannot release shard {shard}: {error}", { shard: i, error: String(err) });
        }
      }
    }
    return false;
  }

  /** Graceful exit: free every held shard, then delete the member Lease. */
  async #leave(): Promise<void> {
    this.#stopping = true;
    await this.#evaluating;
    this.#setActive(new Set());
    await Promise.all([...this.#held].map((i) => this.#free(i)));
    this.#held.clear();
    await this.#membership.leave();
  }

  #setActive(next: Set<string>): void {
    const before = [...this.#active].sort().join();
    this.#active = next;
    if ([...next].sort().join() === before) return;
    const owned = this.owned;
    const named = this.#o.named !== undefined;
    this.#filter.selector = named ? null : shardSelector(this.key, owned, this.count);
    log.info("Owning {count} of {total} shards: {shards}", {
      count: next.size,
      total: named ? this.#ids().length : this.count,
      shards: (named ? this.ownedNames : owned).join(",") || "none",
    });
    if (!named) this.#o.metrics?.owned?.(owned);
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch (err) {
        log.error("Shard listener failed: {error}", { error: String(err) });
      }
    }
  }
}
