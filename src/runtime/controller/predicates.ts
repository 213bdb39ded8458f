/**
 * Predicates filter the events that reach a controller's work queue, as controller-runtime's
 * `predicate` package does. A predicate is a plain function over the informer's
 * {@linkcode ObjectEvent} (the same event the watch and the informer pass on);
 * compose them with {@linkcode and}, {@linkcode or} and {@linkcode not}.
 *
 * Which events each built-in predicate sees:
 *
 * | predicate | added | modified | deleted |
 * |---|---|---|---|
 * | `generationChanged` | passes | `metadata.generation` differs | passes |
 * | `labelsChanged` | passes | labels differ | passes |
 * | `annotationsChanged` | passes | annotations differ | passes |
 * | `resourceVersionChanged` | passes | resourceVersion differs (drops resyncs) | passes |
 * | `deletionStarted` | `deletionTimestamp` set | `deletionTimestamp` newly set | passes |
 *
 * `added` events include objects first seen when the cache fills at startup or relists. A
 * `modified` event without `old` (only a bare watch yields one) passes every predicate
 * except `deletionStarted`, which then asks only whether `deletionTimestamp` is set.
 *
 * @module
 */
import type { KubeObject } from "../../core/object.ts";
import type { ObjectEvent } from "../watch/watch.ts";

/** Decides whether an event should enqueue work: `true` lets it through. */
export type Predicate<T = KubeObject> = (event: ObjectEvent<T>) => boolean;

/**
 * Passes updates that change `metadata.generation`, i.e. the spec (status and metadata
 * writes do not bump it); passes creates and deletes.
 *
 * @param event The event.
 * @returns Whether it passes.
 *
 * @example Spec changed or deletion started, in one line
 * ```ts
 * import { deletionStarted, generationChanged, or } from "./predicates.ts";
 * const specOrDeletion = or(generationChanged, deletionStarted);
 * const old = { metadata: { name: "a", generation: 1 } };
 * const labelled = { metadata: { ...old.metadata, labels: { x: "y" } } };
 * if (specOrDeletion({ type: "modified", old, object: labelled })) throw new Error();
 * const deleting = { metadata: { ...old.metadata, deletionTimestamp: "2025-01-01T00:00:00Z" } };
 * if (!specOrDeletion({ type: "modified", old, object: deleting })) throw new Error();
 * ```
 */
export const generationChanged: Predicate<KubeObject> = (event): boolean =>
  event.type !== "modified" || !event.old ||
  event.old.metadata.generation !== event.object.metadata.generation;

/**
 * Passes updates that change `metadata.labels`; passes creates and deletes.
 *
 * @param event The event.
 * @returns Whether it passes.
 *
 * @example Label changes only
 * ```ts
 * import { labelsChanged } from "./predicates.ts";
 * const old = { metadata: { name: "a", labels: { app: "web" } } };
 * const object = { metadata: { name: "a", labels: { app: "db" } } };
 * if (!labelsChanged({ type: "modified", old, object })) throw new Error();
 * ```
 */
export const labelsChanged: Predicate<KubeObject> = (event): boolean =>
  event.type !== "modified" || !event.old ||
  !sameMap(event.old.metadata.labels, event.object.metadata.labels);

/**
 * Passes updates that change `metadata.annotations`; passes creates and deletes.
 *
 * @param event The event.
 * @returns Whether it passes.
 *
 * @example Annotation changes only
 * ```ts
 * import { annotationsChanged } from "./predicates.ts";
 * const old = { metadata: { name: "a" } };
 * const object = { metadata: { name: "a", annotations: { note: "x" } } };
 * if (!annotationsChanged({ type: "modified", old, object })) throw new Error();
 * ```
 */
export const annotationsChanged: Predicate<KubeObject> = (event): boolean =>
  event.type !== "modified" || !event.old ||
  !sameMap(event.old.metadata.annotations, event.object.metadata.annotations);

/**
 * Passes updates whose `metadata.resourceVersion` changed, so periodic resyncs (which repeat
 * the same object) are dropped; passes creates and deletes.
 *
 * @param event The event.
 * @returns Whether it passes.
 *
 * @example Dropping a resync
 * ```ts
 * import { resourceVersionChanged } from "./predicates.ts";
 * const obj = { metadata: { name: "a", resourceVersion: "7" } };
 * if (resourceVersionChanged({ type: "modified", old: obj, object: obj })) throw new Error();
 * ```
 */
export const resourceVersionChanged: Predicate<KubeObject> = (event): boolean =>
  event.type !== "modified" || !event.old ||
  event.old.metadata.resourceVersion !== event.object.metadata.resourceVersion;

/**
 * Passes updates that set `metadata.deletionTimestamp`, creates of objects already being
 * deleted (seen at startup), and deletes.
 *
 * @param event The event.
 * @returns Whether it passes.
 *
 * @example Deletion requested
 * ```ts
 * import { deletionStarted } from "./predicates.ts";
 * const old = { metadata: { name: "a", finalizers: ["example.com/x"] } };
 * const object = { metadata: { ...old.metadata, deletionTimestamp: "2025-01-01T00:00:00Z" } };
 * if (!deletionStarted({ type: "modified", old, object })) throw new Error();
 * if (deletionStarted({ type: "added", object: old })) throw new Error();
 * ```
 */
export const deletionStarted: Predicate<KubeObject> = (event): boolean => {
  switch (event.type) {
    case "added":
      return !!event.object.metadata.deletionTimestamp;
    case "modified":
      return !!event.object.metadata.deletionTimestamp && !event.old?.metadata.deletionTimestamp;
    case "deleted":
      return true;
  }
};

/**
 * Passes an event when every predicate does (`true` for none).
 *
 * @typeParam T The object type.
 * @param predicates The predicates.
 * @returns The combined predicate.
 *
 * @example Spec changes of labelled objects
 * ```ts
 * import { and, generationChanged } from "./predicates.ts";
 * import type { KubeObject } from "../../core/object.ts";
 * const managed = (e: { object: KubeObject }) => e.object.metadata.labels?.managed === "yes";
 * const p = and(generationChanged, managed);
 * if (p({ type: "added", object: { metadata: { name: "a" } } })) throw new Error();
 * ```
 */
export function and<T extends KubeObject>(...predicates: Predicate<T>[]): Predicate<T> {
  return (event) => predicates.every((p) => p(event));
}

/**
 * Passes an event when any predicate does (`false` for none).
 *
 * @typeParam T The object type.
 * @param predicates The predicates.
 * @returns The combined predicate.
 *
 * @example Labels or annotations changed
 * ```ts
 * import { annotationsChanged, labelsChanged, or } from "./predicates.ts";
 * const p = or(labelsChanged, annotationsChanged);
 * const obj = { metadata: { name: "a" } };
 * if (p({ type: "modified", old: obj, object: obj })) throw new Error();
 * ```
 */
export function or<T extends KubeObject>(...predicates: Predicate<T>[]): Predicate<T> {
  return (event) => predicates.some((p) => p(event));
}

/**
 * Passes an event when `predicate` does not.
 *
 * @typeParam T The object type.
 * @param predicate The predicate to invert.
 * @returns The inverted predicate.
 *
 * @example Everything but deletions in progress
 * ```ts
 * import { deletionStarted, not } from "./predicates.ts";
 * const p = not(deletionStarted);
 * if (!p({ type: "added", object: { metadata: { name: "a" } } })) throw new Error();
 * ```
 */
export function not<T extends KubeObject>(predicate: Predicate<T>): Predicate<T> {
  return (event) => !predicate(event);
}

function sameMap(a?: Record<string, string>, b?: Record<string, string>): boolean {
  if (a === b) return true;
  const ak = Object.keys(a ?? {});
  if (ak.length !== Object.keys(b ?? {}).length) return false;
  return ak.every((k) => b !== undefined && Object.hasOwn(b, k) && b[k] === a![k]);
}
