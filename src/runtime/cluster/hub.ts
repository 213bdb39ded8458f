/**
 * The hub a fleet discovers its clusters from, as its reconciles see it: `hubOf(ctx)` gives
 * its client and a cache of the kinds the fleet's `hubReads` names. A fleet concept, kept out
 * of the controller layer: a reconcile context knows only its cluster's name (`ctx.cluster`),
 * and the fleet, which creates one client per member cluster, registers the hub under that
 * client when it engages the member.
 *
 * @module
 */
import type { Client } from "../../client/client.ts";
import type { CacheReader } from "../cache/reader.ts";

/** The hub cluster as a reconcile sees it, from {@linkcode hubOf}. */
export interface HubAccess {
  /** The hub's client. */
  readonly client: Client;
  /** Reads of the fleet's `hubReads` kinds from the hub's informers, without a request. */
  readonly cache: CacheReader;
}

// Per member cluster's client (one per engaged member): the hub of its fleet. Weak, so that a
// disengaged member's client is not kept alive here.
const hubs = new WeakMap<Client, HubAccess>();

/**
 * The hub of the fleet that runs a reconcile (or a timer or daemon), found by the context's
 * client: the member cluster's own.
 *
 * @param ctx A reconcile, timer or daemon context.
 * @returns The hub's client and cache, or `undefined` on one cluster or in a fleet without a
 * hub.
 *
 * @example Reading the fleet's settings from the hub, with a default on one cluster
 * ```ts
 * import { hubOf } from "./hub.ts";
 * import { reconcile } from "../controller/reconcile.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 * const controller = reconcile(ConfigMap, {
 *   reconcile(cm, ctx) {
 *     const settings = hubOf(ctx)?.cache.get(ConfigMap, "fleet-settings", {
 *       namespace: "fleet-system",
 *     });
 *     ctx.log.info("{key} in {cluster}: mode {mode}", {
 *       key: ctx.key,
 *       cluster: ctx.cluster ?? "this cluster",
 *       mode: settings?.data?.mode ?? "default",
 *     });
 *   },
 * });
 * if (controller.name !== "configmap") throw new Error();
 * ```
 */
export function hubOf(ctx: { readonly client: Client }): HubAccess | undefined {
  return hubs.get(ctx.client);
}

/**
 * Makes `hub` what {@linkcode hubOf} returns for contexts whose client is `member`; the fleet
 * calls it when it engages a member cluster.
 *
 * @param member The member cluster's client, the one its manager hands to reconciles.
 * @param hub The fleet's hub.
 *
 * @example Registering a member's hub
 * ```ts
 * import { hubOf, registerHub } from "./hub.ts";
 * import type { Client } from "../../client/client.ts";
 * import type { CacheReader } from "../cache/reader.ts";
 * const member = {} as Client;
 * const hub = { client: {} as Client, cache: {} as CacheReader };
 * if (hubOf({ client: member }) !== undefined) throw new Error("no hub before");
 * registerHub(member, hub);
 * if (hubOf({ client: member }) !== hub) throw new Error();
 * ```
 */
export function registerHub(member: Client, hub: HubAccess): void {
  hubs.set(member, hub);
}
