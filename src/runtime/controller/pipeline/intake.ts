/**
 * The queue stage's input: every stage that queues a key — the sources, the write gate and the
 * background tasks through the sources — hands it here, with its cause and priority.
 *
 * @module
 */
import { activeLink, tracing } from "../../../util/trace.ts";
import { DEFAULT_PRIORITY, LOW_PRIORITY, type WorkQueue } from "../../queue/workqueue.ts";
import type { Cause, ControllerMetricsHooks } from "../metrics_hooks.ts";
import { CauseLinks } from "./cause_links.ts";

/** Counts each key's cause, remembers the span that queued it, and adds it to the queue. */
export class Intake {
  /** The spans that queued each key, for the reconcile's span links. */
  readonly causes: CauseLinks = new CauseLinks();
  readonly #queue: WorkQueue<string>;
  readonly #controller: string;
  readonly #metrics: ControllerMetricsHooks | undefined;

  /**
   * @param queue The controller's work queue.
   * @param controller The controller's name, for the metrics.
   * @param metrics The controller's metric hooks.
   */
  constructor(
    queue: WorkQueue<string>,
    controller: string,
    metrics: ControllerMetricsHooks | undefined,
  ) {
    this.#queue = queue;
    this.#controller = controller;
    this.#metrics = metrics;
  }

  /**
   * Queues `key` for `cause`.
   *
   * @param key The primary's key.
   * @param cause What caused it.
   * @param priority Its priority; the queue's default when left out.
   */
  enqueue(key: string, cause: Cause, priority?: number): void {
    this.#metrics?.queued?.(this.#controller, cause);
    // A real change may parent the reconcile; a list, resync or requeue only links to it.
    if (tracing()) {
      this.causes.add(key, activeLink(), (priority ?? DEFAULT_PRIORITY) > LOW_PRIORITY);
    }
    this.#queue.add(key, priority === undefined ? undefined : { priority });
  }
}
