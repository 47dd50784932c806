/**
 * Watches every request the gateway's HTTP server receives: one access-log line and the HTTP
 * metrics when its response ends, and the set of requests in flight, so that shutdown can stop
 * accepting connections and still finish what was accepted.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import net from "node:net";
import type { Context, Logger } from "moleculer";
import type { RequestMeta } from "../shared/security/auth";
import { observeHttpRequest } from "../shared/observability/metrics";
import { isProbePath } from "../shared/observability/probes";

/** What moleculer-web leaves on the request once it has routed it. */
type RoutedRequest = IncomingMessage & {
  $alias?: { fullPath?: string };
  originalUrl?: string;
  $ctx?: Context<unknown, RequestMeta>;
};

/** The status label of a request whose client went away before any answer (nginx's convention). */
const CLIENT_CLOSED = 499;
const DRAIN_POLL_MS = 20;
/** How long the listener may stay open at shutdown to accept what the kernel has queued. */
const ACCEPT_QUEUED_MAX_MS = 250;

/** The alias path (`/api/v1/orders/:id`), never the raw URL, so labels and logs stay bounded. */
function routeOf(req: RoutedRequest): string {
  return req.$alias?.fullPath ?? "unmatched";
}

export class HttpObserver {
  private readonly inFlight = new Set<ServerResponse>();
  private readonly connections = new Set<net.Socket>();
  private accepted = 0;
  private draining = false;

  constructor(
    private readonly server: Server,
    private readonly logger: Logger,
  ) {
    // First listener, so the duration includes moleculer-web's own synchronous work.
    server.prependListener("request", (req: RoutedRequest, res: ServerResponse) => this.observe(req, res));
    server.on("connection", (socket: net.Socket) => {
      this.accepted += 1;
      this.connections.add(socket);
      socket.once("close", () => this.connections.delete(socket));
    });
  }

  private observe(req: RoutedRequest, res: ServerResponse): void {
    const started = process.hrtime.bigint();
    this.inFlight.add(res);
    // A request that arrives on a kept-alive connection while draining is served, then its connection closes.
    if (this.draining) res.setHeader("Connection", "close");
    res.once("close", () => {
      this.inFlight.delete(res);
      this.record(req, res, Number(process.hrtime.bigint() - started) / 1e9);
    });
  }

  private record(req: RoutedRequest, res: ServerResponse, seconds: number): void {
    const route = routeOf(req);
    const status = res.headersSent ? res.statusCode : CLIENT_CLOSED;
    const method = req.method ?? "GET";
    observeHttpRequest({ method, route, status, seconds });
    const line = {
      method,
      route,
      path: (req.originalUrl ?? req.url ?? "").split("?")[0],
      status,
      durationMs: Math.round(seconds * 1e4) / 10,
      requestId: req.$ctx?.requestID ?? undefined,
      clientId: req.$ctx?.meta.client?.clientId,
    };
    // Probes and scrapes come every few seconds: keep them out of the info-level access log.
    if (isProbePath(route)) this.logger.debug(line, "request");
    else this.logger.info(line, "request");
  }

  /**
   * Stops accepting connections, then lets every open connection end on its own: a request in
   * flight, or one already on its way on a kept-alive connection, is answered with
   * `Connection: close`; a connection left idle closes after the server's keep-alive timeout
   * (5 s). Whatever is still open at `deadline` is closed.
   */
  async drain(deadline: number): Promise<void> {
    this.draining = true;
    for (const res of this.inFlight) if (!res.headersSent) res.setHeader("Connection", "close");
    // Connections the kernel has completed but the event loop has not yet accepted are reset when
    // the listener closes, though their clients may have sent a request already: let poll phases
    // accept them (setImmediate runs after one) until one accepts nothing more — a busy event
    // loop leaves more queued than one phase takes — for ACCEPT_QUEUED_MAX_MS at most. What is
    // accepted meanwhile is served with `Connection: close`.
    const acceptUntil = Math.min(deadline, Date.now() + ACCEPT_QUEUED_MAX_MS);
    for (let before = -1; before !== this.accepted && Date.now() < acceptUntil;) {
      before = this.accepted;
      await new Promise((resolve) => setImmediate(resolve));
    }
    // net.Server#close only stops listening. http.Server#close would also drop idle kept-alive
    // connections at once, resetting a request a client (or a proxy) is sending on one right now.
    if (this.server.listening) net.Server.prototype.close.call(this.server);
    while (this.connections.size > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
    }
    if (this.inFlight.size > 0)
      this.logger.warn(`Shutdown deadline reached with ${this.inFlight.size} HTTP request(s) in flight`);
    this.server.closeAllConnections();
    // Already closed; this also stops http's timer that checks connections for time-outs.
    this.server.close();
  }
}
