// A small custom resource for controller and manager tests, and how to install it.
import { z } from "zod";
import type { Client } from "../src/client/client.ts";
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
export async function installStack(client: Client): Promise<void> {
  // crd.ts's and kinds_cluster.ts's CRD types differ in their schema's index signature.
  await client.create(
    CustomResourceDefinition,
    Stack.crd(),
  );
  await waitFor(async () => {
    const crd = await client.get(CustomResourceDefinition, Stack.crd().metadata.name!);
    return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
  }, { what: "the Stack CRD to be Established" });
  await waitFor(() => client.list(Stack, { limit: 1 }).then(() => true), {
    what: "stacks to be served",
  });
}

/** Creates a namespace and returns its name. */
export async function createNamespace(client: Client, name: string): Promise<string> {
  await client.create(Namespace, { metadata: { name } });
  return name;
}
