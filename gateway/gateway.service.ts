/**
 * The HTTP gateway (moleculer-web): authentication, the /api/v1 route table, request ids,
 * body limits, list paging headers and the error mapping. No business rule lives here.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Context, Service, ServiceSchema } from "moleculer";
import ApiGateway from "moleculer-web";
import type { ApiSettingsSchema } from "moleculer-web";
import { requireReach, requireScope, type Principal, type RequestMeta, type Scope } from "../shared/security/auth";
import type { Config } from "../shared/config/config";
import { ErrorType, InvalidInputError } from "../shared/errors";
import { BROADCASTS, type ClientsChangedPayload, type UsageReport } from "../shared/messaging/events";
import { isPage } from "../shared/http/paging";
import { onShutdown } from "../shared/shutdown";
import {
  BODY_LIMIT_BYTES,
  bodyRequired,
  checkStreamedBody,
  hasBody,
  jsonBodyParser,
  requiresBody,
  WITH_BODY,
} from "./body-parser";
import { answerClientErrors } from "./client-errors";
import { answeredNotModified, readPreconditions } from "./conditional-headers";
import { answerMethodSemantics } from "./http-methods";
import { HttpObserver } from "./http-observer";
import { actionLookup } from "./openapi/actions";
import { docsRoutes } from "./openapi/docs-routes";
import type { ServiceDescription } from "./openapi/service-description";
import { portalRoutes } from "./portal-routes";
import { PrincipalCache } from "./principal-cache";
import { probeRoutes } from "./probe-route";
import { toProblem } from "../shared/http/problem";
import { ActiveKeys } from "./active-keys";
import { Admission } from "./admission";
import { applyServerLimits } from "./server-limits";
import { UsageSharing } from "./usage-sharing";
import { requestIdOf, traceRequest } from "./request-id";
import { API_PREFIX, aliases, bodyLimits } from "./routes";

type Req = IncomingMessage & {
  $action?: { scope?: Scope; name?: string; params?: unknown };
  /** Decided before routing (gateway/request-id.ts). */
  $requestId?: string;
  $ctx?: Context<unknown, RequestMeta>;
  /** Admitted before its body was read (admitBeforeBody). */
  $principal?: Principal;
  body?: unknown;
  originalUrl?: string;
  /** The path moleculer-web routes by (no query, no trailing slash). */
  parsedUrl?: string;
};

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * `/api/v1/Orders` is not `/api/v1/orders`, `/HEALTHZ` is not `/healthz`: moleculer-web passes
 * `pathToRegexpOptions` to path-to-regexp, which ignores case by default (the option is missing
 * from moleculer-web's typings).
 */
function caseSensitive<R extends object>(routes: R[]): R[] {
  return routes.map((route) => ({ pathToRegexpOptions: { sensitive: true }, ...route }));
}

type AdmitRequest = (req: Req, res: ServerResponse) => Promise<Principal>;
type ScopeOfRoute = (req: Req) => { action: string; scope?: Scope } | undefined;
type BodyLimitOf = (req: Req) => number;

/** The gateway's own methods, and the three of moleculer-web's it calls (its typings declare none). */
interface GatewayMethods {
  admitRequest: AdmitRequest;
  scopeOfRoute: ScopeOfRoute;
  bodyLimitOf: BodyLimitOf;
  sendError(req: Req, res: ServerResponse, err: unknown): void;
  resolveAlias(url: string | undefined, method: string | undefined): { alias: { action?: unknown } } | false;
}

/** What created() builds, and moleculer-web's HTTP server. */
interface GatewayState {
  principals: PrincipalCache;
  activeKeys: ActiveKeys;
  usage: UsageSharing;
  admission: Admission;
  server: Server;
}

/** `this` in the gateway's handlers, settings callbacks included. */
type Gateway = Service<ApiSettingsSchema> & GatewayMethods & GatewayState;

/**
 * Route middleware, before the body parser: a request that carries a body is admitted first and
 * its route's scope checked, so a caller without a valid key (or throttled, or over its rate) or
 * without the scope is refused (401, 429, 403) before the gateway reads and parses up to 1 MiB
 * (16 MiB on a batch, gateway/routes.ts) for it, and a 403 never hides behind a 400, 413 or 415 about a body it may not send
 * (docs/api.md). moleculer-web authenticates only after the route's middlewares have run and its
 * params are built from the body, hence here.
 */
function admitBeforeBody(
  this: { admitRequest: AdmitRequest; scopeOfRoute: ScopeOfRoute },
  req: Req,
  res: ServerResponse,
  next: (err?: unknown) => void,
): void {
  if (!WITH_BODY.has(req.method ?? "") || !hasBody(req)) return next();
  this.admitRequest(req, res)
    .then((principal) => {
      req.$principal = principal;
      const route = this.scopeOfRoute(req);
      if (route) requireReach(principal, route.action);
      if (route?.scope) requireScope(principal, route.scope);
    })
    .then(() => next(), next);
}

/**
 * Route middleware: the body parser of the route, JSON for every route but those whose body
 * streams on to their action (checked here, read by the service: gateway/body-parser.ts).
 */
function parseBody(
  this: { resolveAlias: GatewayMethods["resolveAlias"]; bodyLimitOf(req: IncomingMessage): number },
  req: Req,
  res: ServerResponse,
  next: (err?: unknown) => void,
): void {
  const found = this.resolveAlias(req.parsedUrl, req.method);
  if (!found || (found.alias as { type?: string }).type !== "stream") return jsonBodyParser.call(this, req, res, next);
  try {
    checkStreamedBody(req);
  } catch (err) {
    return next(err);
  }
  next();
}

/** The names of the path's parameters (`id` of `/orders/:id`), from the alias moleculer-web matched. */
function pathParamsOf(req: Req): string[] {
  const alias = (req as { $alias?: { keys?: { name: string }[] } }).$alias;
  return (alias?.keys ?? []).map((k) => k.name);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `<url with cursor=next>; rel="next"` (or the page's own cursor parameter), keeping the caller's other query parameters. */
function nextLink(publicBaseUrl: string, originalUrl: string, nextCursor: string, cursorParam = "cursor"): string {
  const url = new URL(originalUrl, "http://placeholder");
  url.searchParams.set(cursorParam, nextCursor);
  return `<${publicBaseUrl}${url.pathname}${url.search}>; rel="next"`;
}

/** The part of the configuration the gateway is built with (runtime/settings-from-config.ts). */
export type GatewaySettings = Pick<
  Config,
  | "host"
  | "port"
  | "publicBaseUrl"
  | "transporter"
  | "rateLimitPerMinute"
  | "authFailuresPerMinute"
  | "trustProxy"
  | "metricsOnPublicPort"
  | "readinessCheckTimeoutMs"
  | "portal"
>;

/**
 * `services`: what the API reference documents, and `cfg`: where it listens and how it admits
 * requests, both given by the composition root (runtime/services.ts).
 */
export function gatewaySchema(
  services: readonly ServiceDescription[],
  cfg: GatewaySettings,
): ServiceSchema<ApiSettingsSchema, GatewayMethods, GatewayState> {
  const actionDefinition = actionLookup(services);
  const routeBodyLimits = bodyLimits();
  return {
    name: "gateway",
    mixins: [ApiGateway],
    settings: {
      port: cfg.port,
      ip: cfg.host,
      log4XXResponses: false,
      // Sixty route lines at start-up buried the demo banner; LOG_LEVEL=debug shows them.
      logRouteRegistration: "debug",
      logRequest: "debug",
      logResponse: "debug",
      logRequestParams: null,
      logResponseData: null,
      // Request ids: the caller's X-Request-Id (checked before routing, see httpHandler), else a
      // new one; moleculer carries it (ctx.requestID) through every nested call and
      // moleculer-web echoes it as X-Request-ID.
      rootCallOptions: ((options: Record<string, unknown>, req: Req) => {
        options.requestID = req.$requestId;
      }) as unknown as ApiSettingsSchema["rootCallOptions"],
      routes: caseSensitive([
        {
          path: API_PREFIX,
          aliases: aliases(),
          mappingPolicy: "restrict",
          autoAliases: false,
          authentication: true,
          authorization: true,
          mergeParams: true,
          // Ours instead of body-parser's: every rule on bodies and query strings in one place.
          bodyParsers: false,
          use: [admitBeforeBody, parseBody],
          onBeforeCall(ctx: Context<unknown, RequestMeta>, _route: unknown, req: Req) {
            readPreconditions(req, ctx.meta);
            const key = req.headers["idempotency-key"];
            if (key === undefined) return;
            if (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key)) {
              throw InvalidInputError.field("Idempotency-Key", "Must be 1 to 255 printable ASCII characters.");
            }
            ctx.meta.idempotencyKey = key;
          },
          onAfterCall(
            ctx: Context<unknown, RequestMeta>,
            _route: unknown,
            req: Req,
            res: ServerResponse,
            data: unknown,
          ) {
            if (ctx.meta.$location && cfg.publicBaseUrl) ctx.meta.$location = cfg.publicBaseUrl + ctx.meta.$location;
            // moleculer-web sends $location only with 201 and redirects; a 202 or 200 that names where to follow up needs it too.
            if (ctx.meta.$location) res.setHeader("Location", ctx.meta.$location);
            if (answeredNotModified(req, ctx.meta)) return null;
            if (!isPage(data)) return data;
            if (data.nextCursor)
              res.setHeader(
                "Link",
                nextLink(cfg.publicBaseUrl, req.originalUrl ?? req.url ?? "/", data.nextCursor, data.cursorParam),
              );
            return data.items;
          },
        },
        // /healthz, /readyz (and /metrics with METRICS_ON_PUBLIC_PORT): no authentication, no rate limit.
        ...probeRoutes(cfg.metricsOnPublicPort, { checkTimeoutMs: cfg.readinessCheckTimeoutMs }),
        // /api/v1/openapi.json and /docs (Swagger UI): the public API reference, no authentication.
        ...docsRoutes(services, { metricsOnPublicPort: cfg.metricsOnPublicPort }),
        // /portal: the subscriber portal, a page that calls /api/v1 with a portal session (or a key typed into it).
        ...portalRoutes(cfg.portal),
      ]),
      onError(this: Gateway, req: Req, res: ServerResponse, err: unknown) {
        const problem = toProblem(err, (req.originalUrl ?? req.url ?? "").split("?")[0]);
        // An unreachable database is logged once by the service that met it (shared/database/database-errors.ts).
        const loggedWhereItHappened = (err as { type?: unknown } | null)?.type === ErrorType.unavailable;
        if (problem.status >= 500 && !loggedWhereItHappened)
          this.logger.error({ err, url: req.originalUrl, requestId: req.$ctx?.requestID }, "request failed");
        if (res.headersSent) return;
        const requestId = req.$ctx?.requestID ?? req.$requestId;
        res.writeHead(problem.status, { ...problem.headers, ...(requestId ? { "X-Request-ID": requestId } : {}) });
        res.end(JSON.stringify(problem.body));
      },
    },

    events: {
      // Another gateway's rate-limit counts (gateway/usage-sharing.ts); our own broadcast comes back too.
      [BROADCASTS.usageCounted.name](ctx: Context<UsageReport>) {
        return ctx.nodeID === this.broker.nodeID ? undefined : this.usage.apply(ctx.params);
      },
      // Drops the changed client's principals; a payload without a client id drops them all.
      [BROADCASTS.clientsChanged.name](ctx: Context<Partial<ClientsChangedPayload> | undefined>) {
        const { clientId } = ctx.params ?? {};
        if (typeof clientId === "number") this.principals.forget(clientId);
        else this.principals.clear();
        this.activeKeys.forget();
      },
    },

    methods: {
      /**
       * Before moleculer-web routes a request: the X-Request-Id rule and the method semantics of
       * the route table (OPTIONS, HEAD, 405), which its alias matching cannot express; then the
       * request's span.
       */
      httpHandler(req: Req, res: ServerResponse, next?: (err?: unknown) => void) {
        try {
          req.$requestId = requestIdOf(req);
          if (answerMethodSemantics(req, res, req.$requestId)) return;
        } catch (err) {
          // A refused X-Request-Id is not echoed: the answer still carries an id of ours to quote.
          req.$requestId ??= randomUUID();
          return this.sendError(req, res, err);
        }
        const route = ApiGateway.methods as { httpHandler: (...args: unknown[]) => Promise<unknown> };
        // In a span under the caller's traceparent (gateway/request-id.ts), followed by every call it makes.
        return traceRequest(req, res, () => route.httpHandler.call(this, req, res, next));
      },

      /** The largest body the request's route reads (gateway/routes.ts), found as the scope is. */
      bodyLimitOf(req: Req): number {
        const found = this.resolveAlias(req.parsedUrl, req.method);
        const action = found && typeof found.alias.action === "string" ? found.alias.action : "";
        return routeBodyLimits.get(action) ?? BODY_LIMIT_BYTES;
      },

      /** The action the request's route names and its scope (as the service declares it), before it is routed. */
      scopeOfRoute(req: Req): { action: string; scope?: Scope } | undefined {
        const found = this.resolveAlias(req.parsedUrl, req.method);
        if (!found || typeof found.alias.action !== "string") return undefined;
        return { action: found.alias.action, scope: actionDefinition(found.alias.action)?.scope };
      },

      // Failed-authentication throttle, key lookup, per-client rate limit (gateway/admission.ts).
      admitRequest(req: Req, res: ServerResponse): Promise<Principal> {
        const ctx = req.$ctx!;
        return this.admission.admit(req, res, (key: string) =>
          ctx.call<Principal, { key: string }>("clients.authenticate", { key }),
        );
      },

      // Once per request: a request with a body was admitted before it was read (admitBeforeBody).
      async authenticate(
        ctx: Context<unknown, RequestMeta>,
        _route: unknown,
        req: Req,
        res: ServerResponse,
      ): Promise<null> {
        ctx.meta.client = req.$principal ?? (await this.admitRequest(req, res));
        return null;
      },

      // moleculer-web awaits it; throwing refuses the request.
      authorize(ctx: Context<unknown, RequestMeta>, _route: unknown, req: Req): void {
        const scope = req.$action?.scope;
        if (ctx.meta.client) requireReach(ctx.meta.client, req.$action?.name ?? "");
        if (scope && ctx.meta.client) requireScope(ctx.meta.client, scope);
        if (!WITH_BODY.has(req.method ?? "")) return;
        if (req.body === undefined) {
          if (requiresBody(req.$action?.params, pathParamsOf(req))) throw bodyRequired();
        } else if (!isPlainObject(req.body)) {
          throw InvalidInputError.field("", "The body must be a JSON object.");
        }
      },
    },

    created() {
      this.principals = new PrincipalCache();
      this.usage = new UsageSharing(
        cfg.transporter ? (report) => this.broker.broadcast(BROADCASTS.usageCounted.name, report) : null,
        (err) => this.logger.warn({ err }, "rate-limit usage report not sent"),
      );
      this.activeKeys = new ActiveKeys(
        () => this.broker.call<string[]>("clients.activeKeyLookups"),
        (err) => this.logger.warn({ err }, "the list of active API keys could not be loaded"),
      );
      this.admission = new Admission(this.principals, this.activeKeys, this.usage, cfg);
      applyServerLimits(this.server);
      // What Node's server refuses before routing (431, 408, 400) is a problem document too.
      answerClientErrors(this.server);
      // On shutdown: stop accepting connections, finish the requests in flight (shared/shutdown.ts).
      const http = new HttpObserver(this.server, this.logger);
      onShutdown(this.broker, (deadline) => http.drain(deadline));
    },

    stopped() {
      this.usage.stop();
    },
  };
}
