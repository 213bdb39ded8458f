// What `install` does before it writes anything: hand back webhook configurations that a
// killed local `run` left pointing at itself, then check every object with a server-side dry
// run, so that a refusal (403, an invalid object) leaves nothing half-applied.
import type { Client } from "../client/client.ts";
import type { KubeObject } from "../core/object.ts";
import type { Resource } from "../core/resource.ts";
import { restoreWebhooks } from "../webhook/local_registration.ts";
import { restoreConversions } from "../webhook/conversion_config.ts";
import type { OperatorDefinition } from "./_command.ts";
import type { CommandIo } from "../util/cli_io.ts";

/**
 * Restores a local run's leftovers and dry-runs every object `install` will apply.
 *
 * @param client The client.
 * @param def The operator.
 * @param objects What `install` applies, in order.
 * @param resourceOf The resource of each object.
 * @param io Where to report restored configurations.
 * @param run Wraps each request, e.g. to wait out an unreachable API server.
 * @throws {ApiError} The first refusal, before anything was applied.
 */
export async function checkInstall(
  client: Client,
  def: OperatorDefinition,
  objects: readonly KubeObject[],
  resourceOf: (obj: KubeObject) => Resource,
  io: Pick<CommandIo, "out">,
  run: <R>(fn: (signal?: AbortSignal) => Promise<R>) => Promise<R> = (fn) => fn(),
): Promise<void> {
  if (def.webhooks.length) {
    for (const kind of await run(() => restoreWebhooks(client, def.name))) {
      io.out(
        `${kind.toLowerCase()}.admissionregistration.k8s.io/${def.name} restored ` +
          "(a local run had left it pointing at itself)",
      );
    }
  }
  const crdNames = def.conversions.map((r) => `${r.plural}.${r.group}`);
  if (crdNames.length) {
    for (const name of await run(() => restoreConversions(client, crdNames))) {
      io.out(
        `customresourcedefinition.apiextensions.k8s.io/${name} conversion webhook restored ` +
          "(a local run had left it pointing at itself)",
      );
    }
  }
  for (const obj of objects) {
    await run((signal) =>
      client.apply(resourceOf(obj), obj as never, { force: true, dryRun: true, signal })
    );
  }
}
