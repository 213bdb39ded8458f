// The Manager's one owner of start and stop order: runnables by group, groups started in
// RUNNABLE_GROUPS order and stopped in the reverse, the first failure kept and turned into a
// stop. A runnable added while its group runs is started at once (controller-runtime does
// the same), one added after the stop began is refused. Every runnable added is stopped,
// started or not, once; runnables removed while running (a member cluster disengaged) are
// stopped in the same reverse group order.
import type { Client } from "../../client/client.ts";
import { firstLine } from "../../util/cli_io.ts";
import { getLogger } from "../../util/log.ts";
import { type Runnable, RUNNABLE_GROUPS, type RunnableGroup } from "./runnable.ts";

const log = getLogger(["kubeno", "manager"]);

/** The first failure a runnable reported, and whether it asked for an urgent stop. */
export interface Failure {
  error: unknown;
  urgent: boolean;
}

export class Lifecycle {
  readonly #groups = new Map<RunnableGroup, Runnable[]>(RUNNABLE_GROUPS.map((g) => [g, []]));
  readonly #startedGroups = new Set<RunnableGroup>();
  readonly #stop: AbortController;
  /** Each runnable's stop, once begun: stopping it again waits for the same. */
  readonly #stops = new WeakMap<Runnable, Promise<void>>();
  #client: Client | undefined;
  #failure: Failure | undefined;
  #stopping = false;

  constructor(stop: AbortController) {
    this.#stop = stop;
  }

  /** Whether a group started. */
  get started(): boolean {
    return this.#startedGroups.size > 0;
  }

  /** Whether `group` started. */
  hasStarted(group: RunnableGroup): boolean {
    return this.#startedGroups.has(group);
  }

  /** The first failure reported, if any. */
  get failure(): Failure | undefined {
    return this.#failure;
  }

  add(r: Runnable): Promise<void> {
    if (this.#stopping) {
      return Promise.reject(new TypeError(`Cannot add runnable "${r.name}": the manager stops`));
    }
    this.#groups.get(r.group)!.push(r);
    return this.#startedGroups.has(r.group) ? this.#startOne(r) : Promise.resolve();
  }

  /**
   * Stops `runnables` (the groups in reverse order, each group's at once) and forgets them,
   * e.g. a member cluster's informers and controllers when it is disengaged.
   */
  async remove(runnables: readonly Runnable[], reason: "stop" | "urgent" = "stop"): Promise<void> {
    for (const group of [...RUNNABLE_GROUPS].reverse()) {
      const those = runnables.filter((r) => r.group === group);
      await Promise.all(those.map((r) => this.#stopOne(r, reason)));
      const kept = this.#groups.get(group)!.filter((r) => !those.includes(r));
      this.#groups.set(group, kept);
    }
  }

  /** Reports a failure: the first one is kept and the manager's stop begins. */
  fail(error: unknown, options?: { urgent?: boolean }): void {
    const urgent = options?.urgent ?? false;
    if (this.#stopping && !this.#failure) return; // a failure caused by the stop itself
    this.#failure ??= { error, urgent };
    if (urgent) this.#failure.urgent = true;
    this.#stop.abort(error);
  }

  /** Starts one group's runnables, all at once; resolves when each `start` resolved. */
  async startGroup(group: RunnableGroup, client: Client): Promise<void> {
    this.#client = client;
    if (this.#stop.signal.aborted || this.#startedGroups.has(group)) return;
    this.#startedGroups.add(group);
    await Promise.all(this.#groups.get(group)!.map((r) => this.#startOne(r)));
  }

  /**
   * Stops every runnable, started or not (a controller built at start holds a queue to shut
   * down), the groups in reverse order, each group's at once.
   */
  async stopAll(onStopped?: (group: RunnableGroup) => void): Promise<void> {
    this.#stopping = true;
    const reason = this.#failure?.urgent ? "urgent" : "stop";
    for (const group of [...RUNNABLE_GROUPS].reverse()) {
      await Promise.all(this.#groups.get(group)!.map((r) => this.#stopOne(r, reason)));
      onStopped?.(group);
    }
  }

  /** Stops `r` once; a second call waits for the first. */
  #stopOne(r: Runnable, reason: "stop" | "urgent"): Promise<void> {
    let stopping = this.#stops.get(r);
    if (!stopping) {
      stopping = (async () => {
        try {
          await r.stop(reason);
        } catch (err) {
          log.error("Runnable {name} failed to stop: {error}", {
            name: r.name,
            error: firstLine(err),
          });
        }
      })();
      this.#stops.set(r, stopping);
    }
    return stopping;
  }

  async #startOne(r: Runnable): Promise<void> {
    const signal = this.#stop.signal;
    if (signal.aborted) return;
    try {
      await r.start({
        client: this.#client!,
        signal,
        fail: (error, options) => this.fail(error, options),
      });
    } catch (err) {
      if (!signal.aborted) this.fail(err);
    }
  }
}
