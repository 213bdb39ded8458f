// The fixture of the context's unit tests: a context of one reconcile of a Thing.
import type { Client } from "../../../client/client.ts";
import type { Condition, KubeObject } from "../../../core/object.ts";
import { resource } from "../../../core/resource.ts";
import { getLogger } from "../../../util/log.ts";
import { EventRecorder } from "../events.ts";
import { reconcile, type ReconcileOptions } from "../reconcile.ts";
import { createContext } from "./context.ts";

/** The object the fixture's contexts reconcile. */
export type Thing = KubeObject & {
  status?: { phase?: string; observedGeneration?: number; conditions?: Condition[] };
};
export const Thing = resource<Thing>({ group: "a.io", version: "v1", kind: "Thing" });

/** The context of one reconcile of `primary` (key `ns/t`), on `client`. */
export function thingContext(
  client: Client,
  primary: Thing,
  signal: AbortSignal,
  options?: Partial<ReconcileOptions<Thing>>,
) {
  return createContext({
    controller: reconcile(Thing, { reconcile: () => {}, ...options }),
    client,
    events: new EventRecorder(client, { component: "thing" }),
    log: getLogger(["kubeno", "test"]),
    key: "ns/t",
    primary: structuredClone(primary),
    cached: primary,
    cache: { get: () => undefined, list: () => [] },
    signal,
  });
}
