/**
 * The cache, as client-go's `tools/cache` and kube-rs's `reflector`: an indexed
 * {@linkcode Store} kept current by an {@linkcode Informer} (a `watch()` applied to the store,
 * managedFields stripped and objects frozen, each change handed to its handlers), one informer
 * per kind and query shared through an {@linkcode InformerFactory}, and the
 * {@linkcode CacheReader} that answers typed `get`/`list` from those stores without an API
 * request.
 *
 * Caveats: objects handed out of the cache are shared with every reader and frozen; copy one
 * before changing it.
 *
 * @example An index, and an informer over a stand-in client
 * ```ts
 * import { informer, Store } from "./cache.ts";
 * import { resource } from "../core.ts";
 *
 * type Pod = { metadata: { name: string; namespace: string }; spec: { nodeName: string } };
 * const pods = new Store<Pod>({ indexes: { node: (p) => [p.spec.nodeName] } });
 * pods.upsert({ metadata: { name: "a", namespace: "ns" }, spec: { nodeName: "n1" } });
 * if (pods.byIndex("node", "n1")[0].metadata.name !== "a") throw new Error();
 *
 * const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
 * const client = {
 *   list: () => Promise.resolve({ metadata: { resourceVersion: "5" }, items: [] }),
 *   watchEvents: () => (async function* () {})(),
 * };
 * await using cms = informer(ConfigMap, { client }).start();
 * await cms.synced();
 * if (cms.list().length !== 0 || !cms.hasSynced) throw new Error();
 * ```
 *
 * @module
 */
export {
  type IndexFunc,
  Store,
  type StoreChanges,
  type StoreListOptions,
  type StoreOptions,
} from "../src/runtime/cache/store.ts";
export {
  Informer,
  informer,
  type InformerEventInfo,
  type InformerHandlers,
  type InformerHealth,
  type InformerOptions,
  stripManagedFields,
} from "../src/runtime/cache/informer.ts";
export {
  InformerFactory,
  type InformerFactoryOptions,
  type InformerHold,
  type InformerQuery,
} from "../src/runtime/cache/informer_factory.ts";
export {
  type CachedSource,
  type CacheGetOptions,
  type CacheListOptions,
  type CacheReader,
  InformerReader,
  type InformerReaderOptions,
} from "../src/runtime/cache/reader.ts";
export {
  ServedKinds,
  type ServedKindsOptions,
  type ServedListener,
} from "../src/runtime/cache/served_kinds.ts";
