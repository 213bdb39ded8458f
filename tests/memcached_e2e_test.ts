// The operator-sdk Memcached tutorial (examples/memcached.ts) end to end, driven as a user
// drives it: `install`, the operator running in the background, Memcached objects created,
// scaled and deleted against a real control plane with workloads (pods become Ready on kwok's
// fake nodes). The same scenario runs twice: straight against the API server, and through the
// lag proxy with the operator's Memcached and Deployment watches held back 1.5 s, so its cache
// trails its own writes as a slow informer's does.
//
// What it checks is what a reader of the tutorial expects of a correct operator: every
// object reaches Available with its pods ready at each size, every deletion finishes (the
// finalizer comes off), no reconcile retries on a Conflict of the controller's own making,
// and the work stays bounded: at most 20 reconciles per object over its whole life, counted
// by the operator's own controller_runtime_reconcile_total.
import assert from "node:assert/strict";
import { dirname } from "node:path";
import {
  type Client,
  createClient,
  Deployment,
  Event,
  findCondition,
  isNotFound,
  Namespace,
} from "../mod.ts";
import { startControlPlane, startLagProxy } from "../testing.ts";
import { freePort } from "../src/testing/process.ts";
import { Memcached, type MemcachedObject } from "../examples/memcached.ts";
import { spawnLogged, startExample, uniqueName, waitFor } from "./_helpers.ts";

const EXAMPLE = new URL("../examples/memcached.ts", import.meta.url).pathname;
const REPO = new URL("../", import.meta.url).pathname;
const ENV = { NO_COLOR: "1", KUBECONFIG: "/nonexistent", POD_NAMESPACE: "", WATCH_NAMESPACE: "" };
const OBJECTS = 5;
const MAX_RECONCILES_PER_OBJECT = 20;

/** The operator as a user runs it, its JSON log lines collected. */
function runOperator(kubeconfig: string, namespace: string) {
  const metricsPort = freePort();
  const op = startExample(EXAMPLE, [
    `--kubeconfig=${kubeconfig}`,
    `--namespace=${namespace}`,
    `--watch-namespace=${namespace}`,
    `--metrics-bind-address=127.0.0.1:${metricsPort}`,
    "--metrics-secure=false",
    "--health-probe-bind-address=0",
    "--log-format=json",
  ], ENV);
  return {
    /** Its log lines so far. */
    get lines(): string[] {
      return op.lines(/\S/);
    },
    /** The samples of controller_runtime_reconcile_total for the memcached controller. */
    async reconciles(): Promise<Map<string, number>> {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const byResult = new Map<string, number>();
      for (const m of text.matchAll(/^controller_runtime_reconcile_total\{([^}]*)\} (\S+)$/gm)) {
        if (!/controller="memcached"/.test(m[1])) continue;
        const result = m[1].match(/result="([^"]*)"/)?.[1] ?? "";
        byResult.set(result, (byResult.get(result) ?? 0) + Number(m[2]));
      }
      return byResult;
    },
    /** SIGTERM, then the exit status once the log is read to its end. */
    stop: (): Promise<Deno.CommandStatus> => op.stop(),
  };
}

/** Every Memcached Available at `size`, its Deployment at `size` with `size` pods ready. */
async function waitAvailable(client: Client, ns: string, names: string[], size: number) {
  let last = "";
  try {
    await waitFor(async () => {
      for (const name of names) {
        const m = await client.get(Memcached, name, { namespace: ns });
        const available = findCondition(m.status?.conditions, "Available");
        const dep = await client.get(Deployment, name, { namespace: ns });
        last =
          `${name}: Available=${available?.status} (${available?.message}), generation ${m.metadata.generation} observed ${available?.observedGeneration}; Deployment replicas ${dep.spec?.replicas}, ready ${dep.status?.readyReplicas}`;
        const ok = available?.status === "True" &&
          available.observedGeneration === m.metadata.generation &&
          available.message.includes(`with ${size} replicas`) &&
          dep.spec?.replicas === size && dep.status?.readyReplicas === size;
        if (!ok) return false;
      }
      return true;
    }, {
      timeoutMs: 120_000,
      intervalMs: 250,
      what: `${names.length} Memcacheds in ${ns} to be Available with ${size} ready replicas`,
    });
  } catch (err) {
    throw new Error(`${(err as Error).message}; last seen ${last}`, { cause: err });
  }
}

interface Counts {
  reconciles: number;
  byResult: Record<string, number>;
  conflictRetries: number;
  failedRetries: number;
  warnings: Record<string, number>;
  /** The objects that got a Warning Event "Deleting" from finalize. */
  deletingEvents: Set<string>;
  /** The first phase that failed: readiness at a size, or the deletions. */
  failure?: Error;
}

/**
 * Creates, scales twice and deletes `OBJECTS` Memcacheds in a fresh namespace with the
 * operator running on `operatorKubeconfig`; returns what it counted. A phase that fails
 * (readiness at a size, the deletions) is returned with the counts, so they are printed.
 */
async function scenario(
  client: Client,
  label: string,
  operatorKubeconfig: string,
  whileRunning: () => void = () => {},
): Promise<Counts> {
  const ns = await client.create(Namespace, { metadata: { name: uniqueName("memcached") } })
    .then((n) => n.metadata.name!);
  const names = Array.from({ length: OBJECTS }, (_, i) => `memcached-${i}`);
  const operator = runOperator(operatorKubeconfig, ns);
  let stopped = false;
  const tail = () => operator.lines.slice(-40).join("\n");
  try {
    // The first phase that fails ends the scenario; what the operator did is counted anyway.
    let failure: Error | undefined;
    try {
      await Promise.all(names.map((name) =>
        client.create(Memcached, {
          apiVersion: Memcached.apiVersion,
          kind: Memcached.kind,
          metadata: { name, namespace: ns },
          spec: { size: 1, containerPort: 11211 },
        } as MemcachedObject)
      ));
      for (const size of [1, 2, 3]) {
        if (size > 1) {
          await Promise.all(
            names.map((name) =>
              client.patch(Memcached, name, { spec: { size } }, { namespace: ns })
            ),
          );
        }
        await waitAvailable(client, ns, names, size);
      }

      await Promise.all(names.map((name) => client.delete(Memcached, name, { namespace: ns })));
      await waitFor(async () => {
        for (const name of names) {
          const err = await client.get(Memcached, name, { namespace: ns }).then(() => undefined)
            .catch((e) => e);
          if (!isNotFound(err)) return false;
        }
        return true;
      }, {
        timeoutMs: 60_000,
        intervalMs: 250,
        what: `every Memcached in ${ns} to be deleted (finalize ran, finalizer removed)`,
      }).catch(async (err) => {
        const left = (await client.list(Memcached, { namespace: ns })).items.map((m) =>
          `${m.metadata.name} finalizers=${JSON.stringify(m.metadata.finalizers)} conditions=${
            JSON.stringify(m.status?.conditions?.map((c) => `${c.type}=${c.status} ${c.reason}`))
          }`
        );
        throw new Error(`${(err as Error).message}; left: ${left.join("; ")}`, { cause: err });
      });
    } catch (err) {
      failure = err as Error;
      console.log(`${label}: ${failure.message}\noperator log tail:\n${tail()}`);
    }

    whileRunning();
    const byResult = await operator.reconciles();
    const status = await operator.stop();
    stopped = true;
    assert.equal(status.code, 0, `the operator exits 0 on SIGTERM; log:\n${tail()}`);

    const failed = operator.lines.filter((l) => /Reconcile of .* failed, retry/.test(l));
    const warnings: Record<string, number> = {};
    const deletingEvents = new Set<string>();
    for (const e of (await client.list(Event, { namespace: ns })).items) {
      if (e.type !== "Warning") continue;
      const reason = e.reason ?? "";
      warnings[reason] = (warnings[reason] ?? 0) + (e.series?.count ?? e.count ?? 1);
      if (reason === "Deleting") deletingEvents.add(e.involvedObject?.name ?? "");
    }
    const reconciles = [...byResult.values()].reduce((a, b) => a + b, 0);
    const counts: Counts = {
      reconciles,
      byResult: Object.fromEntries(byResult),
      conflictRetries: failed.filter((l) => /Conflict|409/.test(l)).length,
      failedRetries: failed.length,
      warnings,
      deletingEvents,
      failure,
    };
    console.log(
      `${label}: ${reconciles} reconciles for ${OBJECTS} objects (${
        (reconciles / OBJECTS).toFixed(1)
      } per object; ${
        JSON.stringify(counts.byResult)
      }), ${counts.conflictRetries} Conflict retries, ${counts.failedRetries} failed-reconcile retries in all, Warning Events ${
        JSON.stringify(warnings)
      }, ${failure ? "FAILED" : "every phase done, every deletion finished"}`,
    );
    if (failed.length) console.log(`${label}: retries logged:\n${failed.slice(0, 10).join("\n")}`);
    return counts;
  } finally {
    if (!stopped) await operator.stop();
  }
}

function assertBounds(counts: Counts) {
  if (counts.failure) throw counts.failure;
  assert.equal(counts.conflictRetries, 0, "no reconcile retried on a Conflict");
  assert.ok(
    counts.reconciles <= MAX_RECONCILES_PER_OBJECT * OBJECTS,
    `${counts.reconciles} reconciles for ${OBJECTS} objects, more than ${MAX_RECONCILES_PER_OBJECT} each`,
  );
  assert.equal(counts.deletingEvents.size, OBJECTS, "finalize recorded a Deleting Event for each");
}

Deno.test("examples/memcached.ts end to end: create, scale, delete, with and without cache lag", async (t) => {
  await using cp = await startControlPlane({ workloads: true });
  using client = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });

  await t.step("the example header's commands, exactly as written", async () => {
    // deno run -A examples/memcached.ts install; deno run -A examples/memcached.ts;
    // kubectl apply -f examples/memcached-sample.yaml; kubectl patch ... size 5
    const env = {
      KUBECONFIG: cp.kubeconfigPath,
      PATH: `${dirname(cp.binary("kubectl"))}:${dirname(Deno.execPath())}:${Deno.env.get("PATH")}`,
      NO_COLOR: "1",
    };
    const sh = async (line: string) => {
      const out = await new Deno.Command("bash", { args: ["-c", line], cwd: REPO, env }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, `${line}:\n${text}`);
      return text;
    };
    await sh("deno run -A examples/memcached.ts install");
    const operator = spawnLogged("bash", ["-c", "exec deno run -A examples/memcached.ts"], {
      cwd: REPO,
      env,
    });
    try {
      await sh("kubectl apply -f examples/memcached-sample.yaml");
      await waitAvailable(client, "default", ["memcached-sample"], 3);
      await sh(`kubectl patch memcached memcached-sample -p '{"spec":{"size": 5}}' --type=merge`);
      await waitAvailable(client, "default", ["memcached-sample"], 5);
      await sh("kubectl delete -f examples/memcached-sample.yaml --wait=true");
    } catch (err) {
      console.log(`operator log:\n${operator.logs().split("\n").slice(-40).join("\n")}`);
      throw err;
    } finally {
      const status = await operator.stop("SIGTERM");
      assert.equal(status.code, 0, `the operator exited ${status.code} on SIGTERM`);
    }
  });

  await t.step("5 Memcacheds sized 1, 2, 3 and deleted", async () => {
    assertBounds(await scenario(client, "direct", cp.kubeconfigPath));
  });

  await t.step("the same through the lag proxy: watches 1.5 s behind", async () => {
    await using proxy = await startLagProxy({ kubeconfig: cp.kubeconfigPath });
    proxy.delay({ group: "cache.example.com", resource: "memcacheds" }, 1500);
    proxy.delay({ group: "apps", resource: "deployments" }, 1500);
    let delayedWatches = 0;
    const counts = await scenario(client, "lagged", proxy.kubeconfigPath, () => {
      delayedWatches = proxy.stats.delayedWatches;
    });
    console.log(`lagged: the proxy delayed ${delayedWatches} open watches`);
    assert.ok(delayedWatches > 0, "the proxy delayed the operator's watches");
    assertBounds(counts);
  });
});
