/**
 * A TCP relay to a server (PostgreSQL) that can refuse connections and cut the open ones: the
 * server "goes away" for the processes connected through it, as in a restart, while the real
 * server — shared with other tests — is never touched.
 */
import net from "node:net";
import type { AddressInfo } from "node:net";

export class TcpRelay {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  /** Chosen at the first open() and kept, so that clients find it again after a close. */
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  /** A relay to the host and port of a postgres:// URL. */
  static toUrl(url: string): TcpRelay {
    const u = new URL(url);
    return new TcpRelay({ host: u.hostname, port: Number(u.port || 5432) });
  }

  /** `url` with its host and port replaced by the relay's (open() first). */
  rewrite(url: string): string {
    const u = new URL(url);
    u.hostname = "127.0.0.1";
    u.port = String(this.port);
    return u.toString();
  }

  get isOpen(): boolean {
    return this.server !== null;
  }

  async open(): Promise<void> {
    if (this.server) return;
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => s.destroy());
      }
      // A client that dies (SIGKILL: a reset, not an end) must drop its server connection too, as
      // without a relay: else the server keeps its transaction and locks open.
      client.once("close", () => upstream.destroy());
      upstream.once("close", () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Stops listening (new connections are refused) and cuts every open one. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
