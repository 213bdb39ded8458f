/**
 * `/metrics` behind the API server's authentication and authorization, as kubebuilder v4
 * scaffolds it (controller-runtime's `filters.WithAuthenticationAndAuthorization`).
 *
 * Flow: the scraper sends `Authorization: Bearer <token>`; the token is checked with a
 * `TokenReview` (`authentication.k8s.io/v1`), and the user it names with a
 * `SubjectAccessReview` (`authorization.k8s.io/v1`) for the non-resource URL: verb `get`
 * (the HTTP method, lower-cased), path `/metrics`. Grant that with a ClusterRole such as the
 * generated `<name>-metrics-reader` (`nonResourceURLs: ["/metrics"]`, `verbs: ["get"]`).
 *
 * Guarantees: no token or a rejected one gets 401, a user without the permission 403, and
 * only an allowed request reaches the handler; a failing review (API server unreachable)
 * gets 500 and is not cached. Results are cached as controller-runtime does: a token for a
 * minute, an allowed decision for 5 minutes, a denied one for 30 seconds.
 *
 * Assumptions: the operator's own identity may create TokenReviews and
 * SubjectAccessReviews (the generated `<name>-metrics-auth` ClusterRole).
 *
 * @module
 */
import type { Client } from "../client/client.ts";
import { type Clock, realClock } from "../util/clock.ts";
import { getLogger } from "../util/log.ts";

const log = getLogger(["kubeno", "metrics"]);

/** Options of {@linkcode withAuthenticationAndAuthorization}. */
export interface MetricsAuthOptions {
  /** Sends the reviews. */
  client: Pick<Client, "request">;
  /** @default 60_000 */
  tokenCacheMs?: number;
  /** @default 300_000 */
  allowCacheMs?: number;
  /** @default 30_000 */
  denyCacheMs?: number;
  /** The clock for the caches. @default realClock */
  clock?: Pick<Clock, "now">;
}

interface ReviewedUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

const MAX_CACHED = 1024;

/**
 * Wraps `handler` so that only requests whose bearer token the API server authenticates and
 * whose user may `get` the path reach it.
 *
 * @param handler The protected handler.
 * @param options The client that sends the reviews, cache lifetimes, clock.
 * @returns The filtering handler; it never throws.
 *
 * @example Protect a handler
 * ```ts ignore — every request is reviewed by a live API server (TokenReview, SubjectAccessReview)
 * import { withAuthenticationAndAuthorization } from "./authorized.ts";
 * import { Registry } from "./registry.ts";
 * import { createClient } from "../client/client.ts";
 *
 * using client = await createClient();
 * const registry = new Registry();
 * const handler = withAuthenticationAndAuthorization(() => registry.response(), { client });
 * Deno.serve({ port: 8443, cert: "...", key: "..." }, handler);
 * ```
 */
export function withAuthenticationAndAuthorization(
  handler: (req: Request) => Response | Promise<Response>,
  options: MetricsAuthOptions,
): (req: Request) => Promise<Response> {
  const clock = options.clock ?? realClock;
  const tokens = new Map<string, { until: number; user?: ReviewedUser }>();
  const decisions = new Map<string, { until: number; allowed: boolean }>();
  const remember = <V>(map: Map<string, V>, key: string, value: V) => {
    if (map.size >= MAX_CACHED) map.clear();
    map.set(key, value);
  };

  const authenticate = async (token: string): Promise<ReviewedUser | undefined> => {
    const hit = tokens.get(token);
    if (hit && hit.until > clock.now()) return hit.user;
    const review = await options.client.request<
      { status?: { authenticated?: boolean; user?: ReviewedUser } }
    >("POST", "/apis/authentication.k8s.io/v1/tokenreviews", {
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenReview",
        spec: { token },
      },
    });
    const user = review.status?.authenticated ? review.status.user : undefined;
    remember(tokens, token, { until: clock.now() + (options.tokenCacheMs ?? 60_000), user });
    return user;
  };

  const authorize = async (user: ReviewedUser, verb: string, path: string) => {
    const key = JSON.stringify([user.username, user.uid, user.groups, user.extra, verb, path]);
    const hit = decisions.get(key);
    if (hit && hit.until > clock.now()) return hit.allowed;
    const review = await options.client.request<{ status?: { allowed?: boolean } }>(
      "POST",
      "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      {
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SubjectAccessReview",
          spec: {
            user: user.username,
            uid: user.uid,
            groups: user.groups,
            extra: user.extra,
            nonResourceAttributes: { path, verb },
          },
        },
      },
    );
    const allowed = review.status?.allowed === true;
    const ttl = allowed ? options.allowCacheMs ?? 300_000 : options.denyCacheMs ?? 30_000;
    remember(decisions, key, { until: clock.now() + ttl, allowed });
    return allowed;
  };

  return async (req: Request): Promise<Response> => {
    const path = new URL(req.url).pathname;
    const verb = req.method.toLowerCase();
    const header = req.headers.get("authorization") ?? "";
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    try {
      if (!m) return text(401, "Unauthorized");
      const user = await authenticate(m[1]);
      if (!user) return text(401, "Unauthorized");
      if (!(await authorize(user, verb, path))) {
        return text(403, `Forbidden (user=${user.username}, verb=${verb}, path=${path})`);
      }
    } catch (err) {
      log.warn("Cannot review a request for {path}: {message}", {
        path,
        message: err instanceof Error ? err.message : String(err),
      });
      return text(500, "Internal Server Error: cannot check the request's credentials");
    }
    return await handler(req);
  };
}

function text(status: number, body: string): Response {
  return new Response(`${body}\n`, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
  });
}
