/**
 * `EventRecorder`: records Events about objects, the ones `kubectl describe` lists under
 * "Events": through `events.k8s.io/v1` where the server serves it (client-go's
 * `tools/events`, what controller-runtime records with since v0.23), else as core/v1 Events
 * (client-go's `record.EventRecorder`).
 *
 * ## Guarantees
 *
 * - Never throws into the caller and never rejects: a failed write is logged (category
 *   `["kubeno", "events"]`) and dropped.
 * - The first write tries `events.k8s.io/v1`; when the server does not serve it (404 for the
 *   resource) or the operator may not write it (403, RBAC from before it asked for it), that
 *   write and every later one use core/v1 instead, logged once.
 * - Repeated identical events (same object, type, reason, message and source, as keyed by
 *   client-go's EventCorrelator) are aggregated into one Event through a merge patch: an
 *   `events.k8s.io` Event gets a `series` whose `count` grows (2 at the first repeat) and
 *   whose `lastObservedTime` moves; a core/v1 one its `count` and `lastTimestamp`. Writes for
 *   one key are serialised.
 *
 * ## Caveats
 *
 * The aggregation cache is per recorder and bounded (`cacheSize`, least recently used
 * first out); client-go's fuzzy "similar events" combining and spam filter are not done.
 * The API server drops Events after an hour by default.
 *
 * @module
 */
import { getLogger } from "../../util/log.ts";
import { ApiError, isNotFound } from "../../client/errors/api_error.ts";
import type { Client } from "../../client/client.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import { Event } from "../../core/kinds.ts";
import { EventsV1Event } from "../../core/kinds_cluster.ts";
import type { KubeObject } from "../../core/object.ts";

const log = getLogger(["kubeno", "events"]);

/** The two event types Kubernetes knows. */
export type EventType = "Normal" | "Warning";

/** The client operations an {@linkcode EventRecorder} needs. */
export type EventClient = Pick<Client, "create" | "patch">;

/** Options of {@linkcode EventRecorder}. */
export interface EventRecorderOptions {
  /** Who reports: `source.component` and `reportingComponent`, e.g. `myapp-operator`. */
  component: string;
  /**
   * Which instance reports: `source.host` and `reportingInstance`, e.g. the pod name.
   * @default the `HOSTNAME` environment variable when readable, else ""
   */
  host?: string;
  /**
   * How many distinct events to remember for aggregation.
   * @default 4096
   */
  cacheSize?: number;
  /**
   * Time source of the event timestamps.
   * @default realClock
   */
  clock?: Clock;
}

interface Entry {
  name?: string;
  namespace: string;
  count: number;
  tail: Promise<void>;
}

/**
 * Records Events about objects. Calls return at once; writes happen in the background (await
 * the returned promise, or {@linkcode EventRecorder.prototype.flush}, to wait for them).
 *
 * @example Recording from a reconcile
 * ```ts ignore — needs a live API server to record Events on
 * import { EventRecorder } from "./events.ts";
 * import { createClient } from "../../client/client.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 *
 * using client = await createClient();
 * const events = new EventRecorder(client, { component: "myapp-operator" });
 * const cm = await client.get(ConfigMap, "settings", { namespace: "default" });
 * await events.normal(cm, "Deployed", `ConfigMap "${cm.metadata.name}" applied`);
 * ```
 *
 * @example Aggregating repeats with a stand-in client
 * ```ts
 * import { EventRecorder } from "./events.ts";
 * const writes: string[] = [];
 * const client = {
 *   create: (r: any, e: any) => (writes.push(`create ${r.apiVersion}`), Promise.resolve(e)),
 *   patch: (_r: unknown, _n: string, p: any) => (writes.push(`series ${p.series.count}`), Promise.resolve(p)),
 * };
 * const events = new EventRecorder(client as any, { component: "demo", host: "h" });
 * const obj = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "d", uid: "u" } };
 * events.warning(obj, "Failed", "no luck");
 * events.warning(obj, "Failed", "no luck");
 * await events.warning(obj, "Failed", "no luck");
 * if (writes.join() !== "create events.k8s.io/v1,series 2,series 3") throw new Error(writes.join());
 * ```
 */
export class EventRecorder {
  readonly #client: EventClient;
  readonly #component: string;
  readonly #host: string;
  readonly #cacheSize: number;
  readonly #clock: Clock;
  readonly #cache = new Map<string, Entry>();
  readonly #pending = new Set<Promise<void>>();
  #seq = 0;
  // Which API the Events go to: unknown until the first write answers.
  #api: "events.k8s.io" | "core" | undefined;

  /**
   * Creates a recorder.
   *
   * @param client The client to write Events with.
   * @param options Component and host, aggregation cache size, clock.
   */
  constructor(client: EventClient, options: EventRecorderOptions) {
    this.#client = client;
    this.#component = options.component;
    this.#host = options.host ?? hostname();
    this.#cacheSize = options.cacheSize ?? 4096;
    this.#clock = options.clock ?? realClock;
  }

  /**
   * Records a `Normal` event.
   *
   * @param obj The object the event is about, with `apiVersion`, `kind` and name.
   * @param reason Short CamelCase reason, e.g. `Created`.
   * @param message Human-readable description.
   * @returns A promise that resolves once written (or the failure logged); never rejects.
   */
  normal(obj: KubeObject, reason: string, message: string): Promise<void> {
    return this.record(obj, "Normal", reason, message);
  }

  /**
   * Records a `Warning` event.
   *
   * @param obj The object the event is about, with `apiVersion`, `kind` and name.
   * @param reason Short CamelCase reason, e.g. `ReconcileFailed`.
   * @param message Human-readable description.
   * @returns A promise that resolves once written (or the failure logged); never rejects.
   */
  warning(obj: KubeObject, reason: string, message: string): Promise<void> {
    return this.record(obj, "Warning", reason, message);
  }

  /**
   * Records an event of either type.
   *
   * @param obj The object the event is about.
   * @param type `Normal` or `Warning`.
   * @param reason Short CamelCase reason.
   * @param message Human-readable description.
   * @returns A promise that resolves once written (or the failure logged); never rejects.
   */
  record(obj: KubeObject, type: EventType, reason: string, message: string): Promise<void> {
    let key: string;
    let entry: Entry;
    try {
      const m = obj.metadata;
      key = [
        this.#component,
        this.#host,
        obj.kind,
        m.namespace,
        m.name,
        m.uid,
        obj.apiVersion,
        type,
        reason,
        message,
      ].join("\u0000");
      entry = this.#cache.get(key) ??
        { namespace: m.namespace || "default", count: 0, tail: Promise.resolve() };
      this.#cache.delete(key); // re-insert: most recently used last
      this.#cache.set(key, entry);
      if (this.#cache.size > this.#cacheSize) {
        this.#cache.delete(this.#cache.keys().next().value!);
      }
    } catch (err) {
      log.warn("Cannot record event {reason}: {error}", { reason, error: String(err) });
      return Promise.resolve();
    }
    const write = entry.tail.then(() => this.#write(obj, entry, type, reason, message));
    entry.tail = write;
    this.#pending.add(write);
    write.finally(() => this.#pending.delete(write));
    return write;
  }

  /**
   * Waits for every write started so far.
   *
   * @returns A promise that resolves once they are done; never rejects.
   */
  async flush(): Promise<void> {
    while (this.#pending.size) await Promise.all([...this.#pending]);
  }

  async #write(
    obj: KubeObject,
    entry: Entry,
    type: EventType,
    reason: string,
    message: string,
  ): Promise<void> {
    const now = new Date(this.#clock.now());
    const ts = now.toISOString().replace(/\.\d{3}Z$/, "Z");
    try {
      if (this.#api !== "core") {
        try {
          await this.#writeV1(obj, entry, now, type, reason, message);
          this.#api = "events.k8s.io";
          return;
        } catch (err) {
          if (this.#api === "events.k8s.io" || !unserved(err)) throw err;
          this.#api = "core";
          log.info("Recording core/v1 Events: events.k8s.io/v1 answered {code}", {
            code: (err as ApiError).code,
          });
        }
      }
      if (entry.name) {
        try {
          await this.#client.patch(Event, entry.name, {
            count: entry.count + 1,
            lastTimestamp: ts,
          }, { namespace: entry.namespace });
          entry.count++;
          return;
        } catch (err) {
          if (!isNotFound(err)) throw err;
          // The Event expired on the server: start a new one.
        }
      }
      const m = obj.metadata;
      const name = `${m.name ?? "object"}.${this.#uniqueSuffix(now)}`;
      await this.#client.create(Event, {
        metadata: { name, namespace: entry.namespace },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: m.name,
          namespace: m.namespace,
          uid: m.uid,
          resourceVersion: m.resourceVersion,
        },
        type,
        reason,
        message,
        source: { component: this.#component, ...(this.#host ? { host: this.#host } : {}) },
        reportingComponent: this.#component,
        reportingInstance: this.#host,
        firstTimestamp: ts,
        lastTimestamp: ts,
        count: 1,
      }, { namespace: entry.namespace });
      entry.name = name;
      entry.count = 1;
    } catch (err) {
      log.warn("Cannot record {type} event {reason} on {kind} {name}: {error}", {
        type,
        reason,
        kind: obj.kind,
        name: obj.metadata?.name,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  /** One write through `events.k8s.io/v1`: a new Event, or its series' next count. */
  async #writeV1(
    obj: KubeObject,
    entry: Entry,
    now: Date,
    type: EventType,
    reason: string,
    message: string,
  ): Promise<void> {
    const micro = now.toISOString().replace(/Z$/, "000Z");
    if (entry.name) {
      const count = entry.count + 1;
      try {
        await this.#client.patch(EventsV1Event, entry.name, {
          series: { count, lastObservedTime: micro },
        }, { namespace: entry.namespace });
        entry.count = count;
        return;
      } catch (err) {
        if (!isNotFound(err) || (err as ApiError).resourceUnknown) throw err;
        // The Event expired on the server: start a new one.
      }
    }
    const m = obj.metadata;
    const name = `${m.name ?? "object"}.${this.#uniqueSuffix(now)}`;
    await this.#client.create(EventsV1Event, {
      metadata: { name, namespace: entry.namespace },
      eventTime: micro,
      reportingController: this.#component,
      reportingInstance: this.#host || this.#component,
      // kubeno's recorder has no separate action: the reason names what happened.
      action: reason.slice(0, 128),
      reason,
      note: message.length > 1024 ? `${message.slice(0, 1021)}...` : message,
      type,
      regarding: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resourceVersion: m.resourceVersion,
      },
    } as EventsV1Event, { namespace: entry.namespace });
    entry.name = name;
    entry.count = 1;
  }

  // client-go names events `<object>.<hex nanoseconds>`.
  #uniqueSuffix(now: Date): string {
    return (BigInt(now.getTime()) * 1_000_000n + BigInt(this.#seq++ % 1_000_000)).toString(16);
  }
}

/** Whether a write failed because events.k8s.io/v1 is not there for this operator. */
function unserved(err: unknown): boolean {
  return err instanceof ApiError && (err.code === 403 || (err.code === 404 && err.resourceUnknown));
}

function hostname(): string {
  try {
    return Deno.env.get("HOSTNAME") ?? "";
  } catch {
    return "";
  }
}
