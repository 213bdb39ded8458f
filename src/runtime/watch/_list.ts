// The paged list of a watch stream's sync: every page, one request open at a time.
import type { ListPage, ObjectList, ShardInfo } from "../../client/types.ts";
import type { KubeObject } from "../../core/object.ts";
import { abortable, Watchdog } from "./_deadline.ts";
import { isExpired } from "./_classify.ts";
import {
  CLOSED,
  log,
  openRequest,
  STALLED,
  stalled,
  stallMs,
  type WatchContext,
} from "./_context.ts";

/** What a complete paged list found. */
export interface Listed<T> {
  items: T[];
  resourceVersion: string;
  shardInfo?: ShardInfo;
}

/**
 * Lists every page; restarts from the first page once when a `continue` token expires.
 * Each page is read whole before the next is requested (one request open at a time), but
 * decoded while the next one is on its way, when the client can read a page undecoded.
 */
export async function listPages<T extends KubeObject>(ctx: WatchContext<T>): Promise<Listed<T>> {
  const { resource, client } = ctx;
  const { namespace, labelSelector, fieldSelector, shardSelector } = ctx.options;
  const limit = ctx.options.pageSize ?? 2000;
  const fetchPage = (cont: string | undefined): InFlight<ListPage<T>> => {
    ctx.stats.listRequests++;
    const cancel = new AbortController();
    const options = {
      namespace,
      labelSelector,
      fieldSelector,
      shardSelector,
      limit: limit > 0 ? limit : undefined,
      continue: cont,
    };
    const page = request(
      ctx,
      (signal) =>
        client.listPage
          ? client.listPage(resource, { ...options, signal })
          : client.list(resource, { ...options, signal }).then(decoded),
      cancel.signal,
    );
    // Awaited below, or cancelled and settled when decoding the page before it failed.
    page.catch(() => {});
    return { page, cancel: () => (cancel.abort(CLOSED), page.then(() => {}, () => {})) };
  };
  const items: T[] = [];
  let cont: string | undefined;
  let restarted = false;
  let next = fetchPage(undefined);
  for (;;) {
    let page: ListPage<T>;
    try {
      page = await next.page;
    } catch (err) {
      if (cont === undefined || restarted || !isExpired(err)) throw err;
      log.info("List continue token of {what} expired; listing again from the first page", {
        what: ctx.what,
      });
      restarted = true;
      cont = undefined;
      items.length = 0;
      next = fetchPage(undefined);
      continue;
    }
    let list = page.metadata ? undefined : page.decode();
    const meta = page.metadata ?? list!.metadata;
    cont = meta.continue || undefined;
    if (cont) next = fetchPage(cont);
    try {
      list ??= page.decode();
    } catch (err) {
      if (cont) await next.cancel();
      throw err;
    }
    for (const obj of list.items) {
      // List items carry no apiVersion/kind; watch events do. Make them alike.
      obj.apiVersion ??= resource.apiVersion;
      obj.kind ??= resource.kind;
      items.push(obj);
    }
    if (!cont) {
      const { resourceVersion, shardInfo } = list.metadata;
      return { items, resourceVersion: resourceVersion ?? "", shardInfo };
    }
  }
}

/** One request under the watchdog, aborted by the stream's signal or `cancel`. */
async function request<T extends KubeObject, R>(
  ctx: WatchContext<T>,
  send: (signal: AbortSignal) => Promise<R>,
  cancel: AbortSignal,
): Promise<R> {
  const ctl = new AbortController();
  const close = openRequest(ctx, ctl);
  const onCancel = () => ctl.abort(cancel.reason);
  cancel.addEventListener("abort", onCancel, { once: true });
  const dog = new Watchdog(ctx.clock, stallMs(ctx), () => ctl.abort(STALLED));
  try {
    return await abortable(send(ctl.signal), ctl.signal);
  } catch (err) {
    throw dog.fired ? stalled(ctx, "list") : err;
  } finally {
    cancel.removeEventListener("abort", onCancel);
    dog.stop();
    close();
  }
}

/** A request on its way, and how to call it off (settles once it has). */
interface InFlight<R> {
  page: Promise<R>;
  cancel(): Promise<void>;
}

/** A page decoded already, as a {@linkcode ListPage}. */
function decoded<T>(list: ObjectList<T>): ListPage<T> {
  return { metadata: list.metadata, decode: () => list };
}
