/**
 * The finalizer's writes of the primary: the worker runs `finalizer()` (`../finalizer.ts`) with
 * {@linkcode patchPrimary} as its `write`, so that adding and removing the finalizer is
 * computed from and guarded by the newest state this context knows (the reconcile's own status
 * writes included) and refused once the signal aborted, like every other write.
 *
 * @module
 */
import type { MergePatch } from "../../../client/types.ts";
import type { KubeObject } from "../../../core/object.ts";
import type { Sender, WritesInit } from "./send.ts";

/**
 * Merge-patches the primary (the finalizer's add and removal), computed from and guarded by
 * the newest state this context knows.
 *
 * @param sender The context's door for writes, and the newest state of the primary it knows.
 * @param init The client, the controller, the primary and the signal.
 * @param make The patch, from the newest state.
 * @returns The server's answer.
 */
export async function patchPrimary<T extends KubeObject>(
  sender: Sender<T>,
  init: Pick<WritesInit<T>, "client" | "controller" | "signal" | "primary">,
  make: (latest: T) => MergePatch<T>,
): Promise<T> {
  const { client, controller, signal, primary } = init;
  signal.throwIfAborted();
  const res = controller.resource;
  const { name, namespace } = primary.metadata;
  const patch = make(sender.latest);
  const fieldManager = controller.fieldManager;
  return await sender.send(
    res,
    "write",
    { name: name!, namespace },
    () => client.patch(res, name!, patch, { namespace, fieldManager, signal }),
    patch,
  );
}
