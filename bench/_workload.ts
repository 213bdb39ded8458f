// Workloads for the benchmark harness: the Bench CRD, objects created with bounded
// concurrency, and a watch that reports when every Bench has converged.
import type { Client } from "../src/client/client.ts";
import { informer } from "../src/runtime/cache/informer.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";
import { CustomResourceDefinition } from "../src/core/kinds_cluster.ts";
import type { KubeObject } from "../src/core/object.ts";
import type { ObjectOf, Resource } from "../src/core/resource.ts";
import { Bench, NAMESPACE } from "./_bench_resource.ts";

type BenchObject = ObjectOf<typeof Bench>;

/**
 * Creates the `bench` namespace and the Bench CRD, and waits until the CRD is Established.
 *
 * @param client An admin client.
 * @param deadlineMs How long to wait for the CRD.
 * @throws {Error} When the CRD is not Established in time.
 */
export async function installWorkload(client: Client, deadlineMs = 30_000): Promise<void> {
  await client.create(Namespace, { metadata: { name: NAMESPACE } });
  const crd = Bench.crd();
  // crd.ts and kinds_cluster.ts declare the CRD type separately; the shapes agree.
  await client.create(CustomResourceDefinition, crd as never);
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const got = await client.get(CustomResourceDefinition, crd.metadata.name!);
    const established = got.status?.conditions?.some((c: { type: string; status: string }) =>
      c.type === "Established" && c.status === "True"
    );
    if (established) {
      // Established can precede the first list succeeding through the new endpoint.
      try {
        await client.list(Bench, { namespace: NAMESPACE, limit: 1 });
        return;
      } catch { /* not served yet */ }
    }
    if (Date.now() > deadline) {
      throw new Error(`CRD ${crd.metadata.name} was not Established within ${deadlineMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Creates `count` objects, `concurrency` requests at a time.
 *
 * @param client An admin client.
 * @param res The kind.
 * @param count How many.
 * @param make Builds object `i`.
 * @param concurrency Requests in flight.
 */
export async function createMany<T extends KubeObject>(
  client: Client,
  res: Resource<T>,
  count: number,
  make: (i: number) => T,
  concurrency = 16,
): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) await client.create(res, make(next++));
  }));
}

/** Bench `i`'s name. */
export function benchName(i: number): string {
  return `b-${String(i).padStart(5, "0")}`;
}

/**
 * Creates `count` Bench objects in the bench namespace.
 *
 * @param client An admin client.
 * @param count How many.
 */
export async function createBenches(client: Client, count: number): Promise<void> {
  await createMany(client, Bench, count, (i) => ({
    metadata: { name: benchName(i), namespace: NAMESPACE },
    spec: { value: `v-${i}` },
  }));
}

/**
 * Creates `count` ConfigMaps of about 1 KiB each in the bench namespace.
 *
 * @param client An admin client.
 * @param count How many.
 */
export async function createConfigMaps(client: Client, count: number): Promise<void> {
  const filler = "x".repeat(1_000);
  await createMany(client, ConfigMap, count, (i) => ({
    metadata: { name: `cm-${String(i).padStart(5, "0")}`, namespace: NAMESPACE },
    data: { i: String(i), filler },
  }));
}

/**
 * Watches Bench objects and ConfigMaps of the bench namespace from the harness; `converged`
 * resolves with `performance.now()` at the first moment every Bench has
 * `status.observedGeneration === metadata.generation` and its owned ConfigMap exists.
 */
export class ConvergeWatch implements AsyncDisposable {
  readonly #benches;
  readonly #cms;
  readonly #count: number;
  readonly #current = new Set<string>();
  readonly #owned = new Set<string>();
  readonly #waiters = new Set<() => void>();
  /** Each Bench's latest `status.observedGeneration`, and `performance.now()` when first seen. */
  readonly #observed = new Map<string, { generation: number; at: number }>();
  readonly #observers = new Set<
    { name: string; generation: number; resolve: (at: number) => void }
  >();
  #resolve!: (at: number) => void;
  /** Resolves with `performance.now()` once every object has converged. */
  readonly converged: Promise<number>;

  /**
   * @param client An admin client.
   * @param count The number of Bench objects expected.
   */
  constructor(client: Client, count: number) {
    this.#count = count;
    this.converged = new Promise((r) => (this.#resolve = r));
    this.#benches = informer(Bench, { client, namespace: NAMESPACE });
    this.#cms = informer(ConfigMap, { client, namespace: NAMESPACE });
    const bench = (b: BenchObject) => {
      const name = b.metadata.name!;
      if (b.status?.observedGeneration === b.metadata.generation) this.#current.add(name);
      else this.#current.delete(name);
      this.#see(name, b.status?.observedGeneration);
      this.#check();
    };
    this.#benches.onEvent((ev) => void (ev.type !== "deleted" && bench(ev.object)));
    this.#cms.addHandler({
      onEvent: ({ type, object: cm }) => {
        if (
          type === "added" &&
          cm.metadata.ownerReferences?.some((o) => o.kind === "Bench" && o.controller)
        ) {
          this.#owned.add(cm.metadata.name!);
          this.#check();
        }
      },
    });
  }

  /**
   * Starts watching and waits until both watches have listed.
   *
   * @returns This watch.
   */
  async start(): Promise<this> {
    this.#benches.start();
    this.#cms.start();
    await Promise.all([this.#benches.synced(), this.#cms.synced()]);
    return this;
  }

  /** How many Bench objects are current and how many owned ConfigMaps exist. */
  get progress(): { current: number; owned: number } {
    return { current: this.#current.size, owned: this.#owned.size };
  }

  /**
   * Waits until every Bench is current again (e.g. after a round of spec changes).
   *
   * @returns A promise that resolves once all are current.
   */
  current(): Promise<void> {
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#waiters.add(resolve);
    this.#check();
    return promise;
  }

  /**
   * Waits until the harness sees `status.observedGeneration` of Bench `name` at `generation`
   * or later: the operator's status write for that generation is visible.
   *
   * @param name The Bench.
   * @param generation The generation to wait for.
   * @returns A promise of `performance.now()` when the watch first showed it.
   */
  observed(name: string, generation: number): Promise<number> {
    const seen = this.#observed.get(name);
    if (seen && seen.generation >= generation) return Promise.resolve(seen.at);
    const { promise, resolve } = Promise.withResolvers<number>();
    this.#observers.add({ name, generation, resolve });
    return promise;
  }

  #see(name: string, generation: number | undefined): void {
    if (generation === undefined) return;
    const seen = this.#observed.get(name);
    if (seen && seen.generation >= generation) return;
    const at = performance.now();
    this.#observed.set(name, { generation, at });
    for (const o of this.#observers) {
      if (o.name === name && o.generation <= generation) {
        o.resolve(at);
        this.#observers.delete(o);
      }
    }
  }

  #check(): void {
    if (this.#current.size < this.#count || this.#owned.size < this.#count) return;
    for (const name of this.#current) if (!this.#owned.has(name)) return;
    this.#resolve(performance.now());
    for (const w of this.#waiters) w();
    this.#waiters.clear();
  }

  /** Stops both watches. */
  async [Symbol.asyncDispose](): Promise<void> {
    await Promise.all([this.#benches.stop(), this.#cms.stop()]);
  }
}
