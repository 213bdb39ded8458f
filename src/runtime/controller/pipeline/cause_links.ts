/**
 * What queued each key since its last reconcile, as span links: the watch events (or the
 * requeue of the reconcile before) that the work queue merged into one reconcile. The first
 * real change (a live watch event) becomes the reconcile's parent, so the reconcile joins that
 * event's trace; everything else is a link: later events, an initial list or resync, a requeue
 * or retry (as parents those would chain one trace through every requeue of a key, forever).
 * Bounded per key: the newest links are kept, the count of all causes is reported.
 *
 * @module
 */
import type { SpanLink } from "../../../util/trace.ts";

/** Links kept per key besides the parent; OpenTelemetry's default span link limit is 128. */
export const MAX_CAUSE_LINKS = 16;

/** What {@linkcode CauseLinks.take} hands to the reconcile span. */
export interface Caused {
  /** The first real change that queued the key: the reconcile's parent. */
  readonly parent?: SpanLink;
  /** Links to the other causes, oldest first, at most {@linkcode MAX_CAUSE_LINKS}. */
  readonly links: readonly SpanLink[];
  /** How many causes were merged, kept or not. */
  readonly count: number;
}

const NONE: Caused = Object.freeze({ links: Object.freeze([]), count: 0 });

/** Span links of the causes of queued keys: what queued each key, as a trace sees it. */
export class CauseLinks {
  readonly #byKey = new Map<string, { parent?: SpanLink; links: SpanLink[]; count: number }>();

  /**
   * Records that `link` queued `key` (nothing when `link` is undefined).
   *
   * @param key The queued key.
   * @param link The span of what queued it.
   * @param change Whether it is a real change (may be the parent) rather than a list, resync
   * or requeue (only ever a link).
   */
  add(key: string, link: SpanLink | undefined, change: boolean): void {
    if (link === undefined) return;
    let entry = this.#byKey.get(key);
    if (!entry) this.#byKey.set(key, entry = { links: [], count: 0 });
    entry.count++;
    if (change && !entry.parent) {
      entry.parent = link;
      return;
    }
    if (entry.parent === link || entry.links.at(-1) === link) return;
    if (entry.links.length >= MAX_CAUSE_LINKS) entry.links.shift();
    entry.links.push(link);
  }

  /**
   * Takes the causes of `key`, for the reconcile starting now; later ones are the next one's.
   *
   * @param key The key being reconciled.
   * @returns Its parent, links and count (none when tracing is off).
   */
  take(key: string): Caused {
    const entry = this.#byKey.get(key);
    if (!entry) return NONE;
    this.#byKey.delete(key);
    return entry;
  }
}
