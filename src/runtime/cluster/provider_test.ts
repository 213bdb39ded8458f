import assert from "node:assert/strict";
import type { Client } from "../../client/client.ts";
import { fixedClusters, KUBECONFIG_SECRET_LABEL, kubeconfigSecrets } from "./provider.ts";

/** A hub that lists the given Secrets once and then watches nothing. */
function fakeHub(items: unknown[], seen: { labelSelector?: string; namespace?: string }[]): Client {
  return {
    list: (_res: unknown, opts: { labelSelector?: string; namespace?: string }) => {
      seen.push(opts);
      return Promise.resolve({ metadata: { resourceVersion: "1" }, items });
    },
    watchEvents: (_res: unknown, opts: { signal?: AbortSignal }) =>
      (async function* () {
        await new Promise((r) => opts.signal?.addEventListener("abort", r, { once: true }));
        yield* [];
      })(),
  } as unknown as Client;
}

Deno.test("kubeconfigSecrets engages each labelled Secret by name, its kubeconfig decoded", async () => {
  const seen: { labelSelector?: string; namespace?: string }[] = [];
  const secret = (name: string, data?: Record<string, string>) => ({
    metadata: {
      name,
      namespace: "fleet",
      resourceVersion: "1",
      labels: { [KUBECONFIG_SECRET_LABEL]: "true" },
    },
    ...(data ? { data } : {}),
  });
  const hub = fakeHub([
    secret("east", { kubeconfig: btoa("apiVersion: v1\nkind: Config\n") }),
    secret("broken", { other: btoa("x") }),
  ], seen);
  const engaged: [string, unknown][] = [];
  const disengaged: string[] = [];
  const invalid: string[] = [];
  const stop = new AbortController();
  const run = kubeconfigSecrets({ namespace: "fleet" }).run({
    hub,
    signal: stop.signal,
    engage: (name, config) => void engaged.push([name, config]),
    disengage: (name) => void disengaged.push(name),
    invalid: (name, problem, origin) =>
      void invalid.push(`${name}: ${problem} (on ${origin?.kind} ${origin?.metadata.name})`),
  });
  for (let i = 0; i < 100 && engaged.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  stop.abort();
  await run;
  assert.deepEqual(engaged.map(([name, c]: [string, any]) => [name, c.kubeconfigText]), [
    ["east", "apiVersion: v1\nkind: Config\n"],
  ]);
  assert.equal((engaged[0][1] as any).origin.kind, "Secret");
  assert.deepEqual(disengaged, [], "a Secret without the key is reported, not engaged");
  assert.deepEqual(invalid, [
    'broken: Secret fleet/broken has no key "kubeconfig": put the member\'s kubeconfig there (on Secret broken)',
  ]);
  assert.equal(seen[0].labelSelector, `${KUBECONFIG_SECRET_LABEL}=true`);
  assert.equal(seen[0].namespace, "fleet");
});

Deno.test("kubeconfigSecrets needs a hub and a namespace", async () => {
  assert.throws(() => kubeconfigSecrets({ namespace: "" }), /namespace must not be empty/);
  await assert.rejects(
    kubeconfigSecrets({ namespace: "fleet" }).run({
      hub: undefined,
      signal: AbortSignal.abort(),
      engage() {},
      disengage() {},
      invalid() {},
    }),
    /the fleet has no hub client/,
  );
});

Deno.test("fixedClusters engages every cluster at once and refuses duplicate names", async () => {
  assert.throws(
    () => fixedClusters([{ name: "a", kubeconfig: "x" }, { name: "a", kubeconfig: "y" }]),
    /two clusters are named "a"/,
  );
  const engaged: string[] = [];
  await fixedClusters([{ name: "a", kubeconfig: "/a" }, {
    name: "b",
    kubeconfig: "/b",
    context: "c",
  }])
    .run({
      hub: undefined,
      signal: AbortSignal.abort(),
      engage: (name, config) => void engaged.push(`${name} ${JSON.stringify(config)}`),
      disengage() {},
      invalid() {},
    });
  assert.deepEqual(engaged, [
    'a {"kubeconfigPath":"/a"}',
    'b {"kubeconfigPath":"/b","context":"c"}',
  ]);
});
