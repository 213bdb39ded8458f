// How watch() sorts failures into transient and persistent, and turns them into WatchErrors.
import { ApiError, ConnectionError, isGone, type Status } from "../../client/errors/api_error.ts";
import type { Resource } from "../../core/resource.ts";
import { describeQuery, type QueryLike, WatchError } from "./watch_error.ts";

// Retrying these cannot help until someone changes RBAC, installs a CRD or fixes the query.
const PERSISTENT_CODES = new Set([400, 401, 403, 404, 405, 406, 415, 422]);

/** Whether an error or a watch ERROR status says the resourceVersion is too old. */
export function isExpired(x: unknown): boolean {
  if (x instanceof ApiError) return isGone(x);
  if (x instanceof Error || typeof x !== "object" || x === null) return false;
  const st = x as Status;
  return st.code === 410 || st.reason === "Expired" || st.reason === "Gone" ||
    /too old resource version/i.test(st.message ?? "");
}

/** Turns whatever a list or watch request threw into a one-line `WatchError`. */
export function toWatchError(
  err: unknown,
  phase: "list" | "watch",
  res: Resource<any>,
  q: QueryLike,
  persistentOtherwise: boolean,
): WatchError {
  if (err instanceof WatchError) return err;
  const base = { resource: res, namespace: q.namespace };
  const what = describeQuery(res, q);
  if (err instanceof ApiError) {
    return new WatchError(err.message, {
      ...base,
      persistent: PERSISTENT_CODES.has(err.code),
      code: err.code,
      reason: err.reason,
    }, { cause: err });
  }
  if (err instanceof ConnectionError) {
    const rest = err.message.replace(/^Cannot \w+ from /, "");
    return new WatchError(`Cannot ${phase} ${what} from ${rest}`, {
      ...base,
      persistent: false,
      reason: "ConnectionFailed",
    }, { cause: err });
  }
  const msg = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, " ").trim();
  return new WatchError(`Cannot ${phase} ${what}: ${msg}`, {
    ...base,
    persistent: persistentOtherwise,
  }, { cause: err });
}
