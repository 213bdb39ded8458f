/**
 * `ServedKinds`: which of some kinds the API server serves now, and when that changes — the
 * manager's view of optional kinds (a cert-manager `Certificate`, a Gateway API route, another
 * team's CRD) that may be installed after the operator started, or removed while it runs.
 *
 * ## Flow
 *
 * `start()` asks discovery once per group and version (`GET /apis/<group>/<version>`, which
 * every authenticated user may read): a kind is served when its plural is listed. Then one
 * informer on CustomResourceDefinitions (apiextensions.k8s.io/v1, its schemas stripped to keep
 * it small) follows every CRD named `<plural>.<group>` of a followed kind: the kind is served
 * while its CRD is `Established` and serves its version, and not once the CRD is deleted or
 * stops serving that version. Each change is handed to the kind's listeners.
 *
 * ## Guarantees
 *
 * - A listener hears each change once, in order; never a state equal to the last it heard.
 * - A kind served without a CRD (an aggregated API) stays as discovery found it at start.
 *
 * ## Caveats
 *
 * - An aggregated API (not a CRD) that appears after start is not noticed until a restart.
 * - Following CRDs needs `get`, `list` and `watch` on `customresourcedefinitions`, which the
 *   operator's derived RBAC grants when a controller has an optional kind.
 *
 * @module
 */
import type { Client } from "../../client/client.ts";
import { ApiError } from "../../client/errors/api_error.ts";
import type { Resource } from "../../core/resource.ts";
import { CustomResourceDefinition } from "../../core/api/apiextensions/v1.ts";
import type { ObjectEvent } from "../watch/watch.ts";
import type { InformerFactory } from "./informer_factory.ts";

/** Options of {@linkcode ServedKinds}. */
export interface ServedKindsOptions {
  /** Asks discovery. */
  client: Pick<Client, "request">;
  /** Where the CustomResourceDefinition informer comes from. */
  informers: Pick<InformerFactory, "for">;
}

/** Hears whether a followed kind is served, at start and at each change. */
export type ServedListener = (served: boolean) => void;

interface Followed {
  readonly resource: Resource<any>;
  served: boolean;
  // Whether the listeners heard a state yet.
  told: boolean;
  readonly listeners: Set<ServedListener>;
}

/**
 * Follows whether kinds are served; see the module docs.
 *
 * @example Following a kind that is not installed
 * ```ts
 * import { ServedKinds } from "./served_kinds.ts";
 * import { InformerFactory } from "./informer_factory.ts";
 * import { ApiError } from "../../client/errors/api_error.ts";
 * import { resource } from "../../core/resource.ts";
 * const Widget = resource({ group: "example.com", version: "v1", kind: "Widget" });
 * const client = {
 *   list: () => Promise.resolve({ metadata: { resourceVersion: "1" }, items: [] }),
 *   watchEvents: () => (async function* () {})(),
 *   request: () =>
 *     Promise.reject(
 *       new ApiError({ verb: "get", kind: "", apiVersion: "", plural: "/apis/example.com/v1" }, {
 *         code: 404,
 *         reason: "NotFound",
 *         serverMessage: "404 page not found",
 *       }),
 *     ),
 * };
 * await using informers = new InformerFactory({ client }).start();
 * const kinds = new ServedKinds({ client, informers });
 * const heard: boolean[] = [];
 * kinds.follow(Widget, (served) => void heard.push(served));
 * await kinds.start();
 * if (kinds.served(Widget) || heard.join() !== "false") throw new Error(heard.join());
 * ```
 */
export class ServedKinds {
  readonly #opts: ServedKindsOptions;
  // By `<plural>.<group>/<version>`: the CRD's name and the version served.
  readonly #kinds = new Map<string, Followed>();
  #started = false;
  #unsubscribe: (() => void) | undefined;

  /**
   * Creates a tracker that follows nothing yet.
   *
   * @param options The client for discovery and the informer factory.
   */
  constructor(options: ServedKindsOptions) {
    this.#opts = options;
  }

  /**
   * Follows a kind: `listener` hears its state once `start()` found it, then each change.
   *
   * @param res The kind (a `metadataOnly(...)` view counts as its kind).
   * @param listener Told `true` when served, `false` when not.
   * @returns What stops telling `listener`.
   * @throws {TypeError} After `start()`.
   */
  follow(res: Resource<any>, listener: ServedListener): () => void {
    if (this.#started) throw new TypeError("Cannot follow a kind: already started");
    const key = `${res.plural}.${res.group}/${res.version}`;
    let f = this.#kinds.get(key);
    if (!f) {
      this.#kinds.set(key, f = { resource: res, served: false, told: false, listeners: new Set() });
    }
    f.listeners.add(listener);
    return () => void f.listeners.delete(listener);
  }

  /**
   * Whether the API server serves a followed kind now.
   *
   * @param res The kind.
   * @returns `true` when served; `false` when not, or not followed.
   */
  served(res: Resource<any>): boolean {
    return this.#kinds.get(`${res.plural}.${res.group}/${res.version}`)?.served ?? false;
  }

  /**
   * The followed kinds the API server does not serve now.
   *
   * @returns Their resources, as first followed.
   */
  missing(): Resource<any>[] {
    return [...this.#kinds.values()].filter((f) => !f.served).map((f) => f.resource);
  }

  /**
   * Asks discovery for each followed kind, tells the listeners, and starts following CRDs.
   *
   * @param signal Cancels the discovery requests.
   * @returns A promise that resolves once every kind's first state was told.
   * @throws The signal's reason when it aborts.
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    if (!this.#kinds.size) return;
    const byGroupVersion = new Map<string, Followed[]>();
    for (const f of this.#kinds.values()) {
      const gv = `${f.resource.group}/${f.resource.version}`;
      byGroupVersion.set(gv, [...byGroupVersion.get(gv) ?? [], f]);
    }
    await Promise.all([...byGroupVersion].map(async ([gv, kinds]) => {
      const plurals = await this.#discover(gv, signal);
      for (const f of kinds) this.#set(f, plurals === undefined || plurals.has(f.resource.plural));
    }));
    signal?.throwIfAborted();
    const crds = this.#opts.informers.for(CustomResourceDefinition, { transform: slim });
    this.#unsubscribe = crds.onEvent((ev) => this.#onCrd(ev));
  }

  /** Stops following CRDs (the informer stays with its factory). */
  stop(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }

  /** The plurals discovery lists for `group/version`; `undefined` when it cannot tell. */
  async #discover(gv: string, signal?: AbortSignal): Promise<Set<string> | undefined> {
    try {
      const list = await this.#opts.client.request<{ resources?: { name: string }[] }>(
        "GET",
        `/apis/${gv}`,
        { signal },
      );
      return new Set((list.resources ?? []).map((r) => r.name));
    } catch (err) {
      signal?.throwIfAborted();
      if (err instanceof ApiError && err.code === 404) return new Set();
      // Refused or failing: count it as served, so its informer reports the failure itself.
      return undefined;
    }
  }

  #onCrd(ev: ObjectEvent<CustomResourceDefinition>): void {
    const crd = ev.object;
    for (const version of crd.spec?.versions ?? [{ name: "" }]) {
      const f = this.#kinds.get(`${crd.metadata.name}/${version.name}`);
      if (f) this.#set(f, ev.type !== "deleted" && serves(crd, version.name));
    }
    // A version the CRD no longer lists is no longer served.
    if (ev.type === "modified") {
      for (const [key, f] of this.#kinds) {
        if (!key.startsWith(`${crd.metadata.name}/`)) continue;
        if (!crd.spec?.versions?.some((v) => key === `${crd.metadata.name}/${v.name}`)) {
          this.#set(f, false);
        }
      }
    }
  }

  #set(f: Followed, served: boolean): void {
    if (f.told && f.served === served) return;
    f.served = served;
    f.told = true;
    for (const l of f.listeners) l(served);
  }
}

/** Whether a CRD is established and serves `version`. */
function serves(crd: CustomResourceDefinition, version: string): boolean {
  const established = crd.status?.conditions?.some((c) =>
    c.type === "Established" && c.status === "True"
  );
  return !!established && !!crd.spec?.versions?.find((v) => v.name === version)?.served;
}

/** Keeps what `serves` reads: CRD schemas can be large, and are never needed here. */
function slim(crd: CustomResourceDefinition): CustomResourceDefinition {
  return {
    apiVersion: crd.apiVersion,
    kind: crd.kind,
    metadata: {
      name: crd.metadata.name,
      resourceVersion: crd.metadata.resourceVersion,
      uid: crd.metadata.uid,
    },
    spec: {
      ...crd.spec,
      versions: (crd.spec?.versions ?? []).map((v) => ({ name: v.name, served: v.served })),
    } as CustomResourceDefinition["spec"],
    status: { conditions: crd.status?.conditions } as CustomResourceDefinition["status"],
  };
}
