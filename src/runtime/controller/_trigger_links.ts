/**
 * What queued each key since its last reconcile, as span links: the watch events (or the
 * requeue of the reconcile before) that the work queue merged into one reconcile. Bounded per
 * key: the first trigger (the reconcile's parent) and the newest ones are kept, the count of
 * all of them is reported.
 *
 * @module
 */
import type { SpanLink } from "../../util/trace.ts";

/** Links kept per key; OpenTelemetry's default span link limit is 128. */
export const MAX_TRIGGER_LINKS = 16;

/** What {@linkcode TriggerLinks.take} hands to the reconcile span. */
export interface Triggered {
  /** Links to the triggers, oldest first, at most {@linkcode MAX_TRIGGER_LINKS}. */
  readonly links: readonly SpanLink[];
  /** How many triggers were merged, kept or not. */
  readonly count: number;
}

const NONE: Triggered = Object.freeze({ links: Object.freeze([]), count: 0 });

/** Span links of the triggers of queued keys. */
export class TriggerLinks {
  readonly #byKey = new Map<string, { links: SpanLink[]; count: number }>();

  /**
   * Records that `link` queued `key` (nothing when `link` is undefined).
   *
   * @param key The queued key.
   * @param link The span of what queued it.
   */
  add(key: string, link: SpanLink | undefined): void {
    if (link === undefined) return;
    let entry = this.#byKey.get(key);
    if (!entry) this.#byKey.set(key, entry = { links: [], count: 0 });
    entry.count++;
    if (entry.links.at(-1) === link) return;
    // Keep the first (the parent) and the newest.
    if (entry.links.length >= MAX_TRIGGER_LINKS) entry.links.splice(1, 1);
    entry.links.push(link);
  }

  /**
   * Takes the triggers of `key`, for the reconcile starting now; later ones are the next one's.
   *
   * @param key The key being reconciled.
   * @returns Its links and count (none when tracing is off).
   */
  take(key: string): Triggered {
    const entry = this.#byKey.get(key);
    if (!entry) return NONE;
    this.#byKey.delete(key);
    return entry;
  }
}
