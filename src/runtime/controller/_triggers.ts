// The runner's triggers, as kube-rs's `trigger_self` / `trigger_owners` / `trigger_with`:
// small functions from one informer event to the primary keys it should queue. The runner
// wires one to each cached kind's informers (`ControllerRuntime#wire`); what it does with
// the keys — echo filtering, waiting for its own writes' answers, metrics — is the runner's.
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import { groupOf } from "../../core/api_version.ts";
import { objectKey } from "../../core/object_key.ts";
import { controllerOf } from "../../core/owner.ts";
import type { CacheReader } from "../cache/reader.ts";
import type { ObjectEvent } from "../watch/watch.ts";
import type { Predicate } from "./predicates.ts";
import type { WatchSpec } from "./reconcile.ts";

/**
 * Whether an event passes every predicate (none passes all).
 *
 * @param predicates The predicates.
 * @param ev The event.
 * @returns `true` when none refuses it.
 */
export function passes<U>(predicates: readonly Predicate<U>[], ev: ObjectEvent<U>): boolean {
  return predicates.every((p) => p(ev));
}

/**
 * The primary's own key: an event of the primary kind queues the object itself.
 *
 * @param ev An event of the primary kind.
 * @returns The object's key.
 */
export function enqueueSelf(ev: ObjectEvent<KubeObject>): string {
  return objectKey(ev.object);
}

/**
 * The primaries that are the controller owner of an owned object, before and after the
 * event: a changed owner queues both.
 *
 * @param owner The primary kind.
 * @param ev An event of an owned kind.
 * @returns The owners' keys (in the object's namespace when the primary is namespaced).
 */
export function enqueueOwners(owner: Resource<any>, ev: ObjectEvent<KubeObject>): Set<string> {
  const keys = new Set<string>();
  for (const obj of statesOf(ev)) {
    const ref = controllerOf(obj);
    if (!ref || ref.kind !== owner.kind || groupOf(ref.apiVersion) !== owner.group) continue;
    const namespace = owner.namespaced ? obj.metadata.namespace : undefined;
    keys.add(objectKey({ namespace, name: ref.name }));
  }
  return keys;
}

/**
 * The primaries a watched object maps to, before and after the event, when the event passes
 * the watch's predicates.
 *
 * @param spec The watch's map function and predicates.
 * @param cache What the map function may read.
 * @param ev An event of the watched kind.
 * @returns The keys the map function returned for either state; none when a predicate
 * refused the event.
 */
export function enqueueMapped<U extends KubeObject>(
  spec: Pick<WatchSpec<U>, "map" | "predicates">,
  cache: CacheReader,
  ev: ObjectEvent<U>,
): Set<string> {
  const keys = new Set<string>();
  if (!passes(spec.predicates ?? [], ev)) return keys;
  for (const obj of statesOf(ev)) {
    for (const k of spec.map(obj, cache)) keys.add(typeof k === "string" ? k : objectKey(k));
  }
  return keys;
}

/** The states an event shows: the old and the new one of a modification, else the object. */
function statesOf<U>(ev: ObjectEvent<U>): U[] {
  return ev.type === "modified" && ev.old ? [ev.old, ev.object] : [ev.object];
}
