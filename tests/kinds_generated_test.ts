// The built-in kinds under src/core/api/ (and core.ts's block of their re-exports) are
// generated from the pinned API server's OpenAPI v3 by `deno task gen:kinds`. This test
// generates them again from a fresh control plane and fails when what is checked in differs.
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import {
  CORE_ENTRY,
  generateFromControlPlane,
  OUT_DIR,
  SCHEMA_DATA,
  staleFiles,
} from "../testenv/gen_kinds.ts";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

Deno.test("generated built-in kinds match the API server's OpenAPI v3", async () => {
  const files = await generateFromControlPlane(ROOT);
  const paths = files.map((f) => f.path);
  assert.ok(paths.includes(`${OUT_DIR}/core/v1.ts`) && paths.includes(CORE_ENTRY));
  // The built-in zod schemas' data (builtinSchema) is generated with them and checked too.
  assert.match(
    files.find((f) => f.path === SCHEMA_DATA)?.text ?? "",
    /PodTemplateSpec: PodTemplateSpec;/,
  );
  // The kinds the issue named as missing from the hand-written set are all there.
  const all = files.map((f) => f.text).join("\n");
  for (
    const kind of [
      "Ingress",
      "NetworkPolicy",
      "PersistentVolumeClaim",
      "CronJob",
      "HorizontalPodAutoscaler",
      "PodDisruptionBudget",
      "EndpointSlice",
    ]
  ) {
    assert.match(all, new RegExp(`export const ${kind}: Resource<${kind}>`), kind);
  }
  const stale = await staleFiles(files, ROOT);
  assert.deepEqual(stale, [], `stale generated files; run deno task gen:kinds`);
});
