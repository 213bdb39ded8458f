// A small custom resource for controller and manager tests, how to install it, and a
// controller run in one namespace with its queue observed.
import { z } from "zod";
import type { Client } from "../src/client/client.ts";
import type { KubeObject } from "../src/core/object.ts";
import type { Resource } from "../src/core/resource.ts";
import type { Controller } from "../src/runtime/controller/reconcile.ts";
import type { Cause } from "../src/runtime/controller/metrics_hooks.ts";
import { ControllerRuntime } from "../src/runtime/controller/pipeline/runner.ts";
import { InformerFactory } from "../src/runtime/cache/informer_factory.ts";
import { defineResource } from "../src/schema/define_resource.ts";
import { Namespace } from "../src/core/kinds.ts";
import { CustomResourceDefinition } from "../src/core/kinds_cluster.ts";
import { waitFor } from "./_helpers.ts";

/** `Stack`: its controller copies `spec.value` into an owned ConfigMap. */
export const Stack = defineResource({
  group: "ctl.kubeno.dev",
  version: "v1",
  kind: "Stack",
  spec: z.object({ value: z.string().default("") }),
  status: z.object({
    observed: z.string().optional(),
    conditions: z.array(z.object({
      type: z.string(),
      status: z.enum(["True", "False", "Unknown"]),
      observedGeneration: z.int().optional(),
      lastTransitionTime: z.string(),
      reason: z.string(),
      message: z.string(),
    })).optional(),
  }),
});

/** Installs the Stack CRD and waits until it is Established and served. */
export function installStack(client: Client): Promise<void> {
  return installResource(client, Stack);
}

/** Installs the CRD of a `defineResource` kind and waits until it is Established and served. */
export async function installResource(
  client: Client,
  res: Resource<any> & { crd: typeof Stack.crd },
): Promise<void> {
  const name = res.crd().metadata.name!;
  // crd.ts's and kinds_cluster.ts's CRD types differ in their schema's index signature.
  await client.create(CustomResourceDefinition, res.crd());
  await waitFor(async () => {
    const crd = await client.get(CustomResourceDefinition, name);
    return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
  }, { what: `the ${res.kind} CRD to be Established` });
  await waitFor(() => client.list(res, { limit: 1 }).then(() => true), {
    what: `${res.kind} objects to be served`,
  });
}

/** Creates a namespace and returns its name. */
export async function createNamespace(client: Client, name: string): Promise<string> {
  await client.create(Namespace, { metadata: { name } });
  return name;
}

/**
 * Runs `controller` in `ns` through `client` with its own informers, recording each queue
 * add's cause and time and counting the echoes it skipped; `idle()` says whether nothing is
 * queued or running.
 */
export async function runObserved<T extends KubeObject>(
  controller: Controller<T>,
  client: Client,
  ns: string,
) {
  const causes: { cause: Cause; at: number }[] = [];
  let active = 0;
  let echoes = 0;
  const informers = new InformerFactory({ client });
  const runtime = new ControllerRuntime(controller, {
    client,
    informers,
    namespaces: [ns],
    metrics: {
      queued: (_, cause) => void causes.push({ cause, at: performance.now() }),
      echo: () => void echoes++,
      activeWorkers: (_, n) => void (active = n),
    },
  });
  informers.start();
  await runtime.start();
  return {
    runtime,
    informers,
    causes,
    /** Watch events that were the echo of the controller's own write, skipped. */
    echoes: () => echoes,
    idle: () => runtime.queue.len() === 0 && active === 0,
    async [Symbol.asyncDispose]() {
      await runtime.stop(10_000);
      await informers[Symbol.asyncDispose]();
    },
  };
}
