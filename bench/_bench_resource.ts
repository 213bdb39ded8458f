// The benchmark's custom resource, benches.bench.kubeno.dev: the Go peers declare the same
// shape by hand (bench/peers/go/internal/benchapi). The harness installs its CRD.
import { z } from "zod";
import { defineResource } from "../src/schema/define_resource.ts";

/** The Bench kind: `spec.value` is copied into the owned ConfigMap. */
export const Bench = defineResource({
  group: "bench.kubeno.dev",
  version: "v1alpha1",
  kind: "Bench",
  spec: z.object({ value: z.string().default("").describe("Copied into the owned ConfigMap") }),
  status: z.object({
    observedGeneration: z.number().int().optional().describe("Last generation converged"),
  }),
});

/** The finalizer every contender adds. */
export const FINALIZER = "bench.kubeno.dev/cleanup";

/** The server-side apply field manager every contender uses. */
export const FIELD_MANAGER = "bench-operator";

/** The namespace the workload lives in. */
export const NAMESPACE = "bench";
