/**
 * PostgreSQL unreachable (refused, or its connections cut as in a restart): every request that
 * needs it is a 503 problem with Retry-After, /readyz says the database is not ok, and it all
 * comes back once the database answers again. The services reach the test database through a
 * TCP relay this test opens and closes; the real server is never touched.
 */
import type { Server } from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { startTestBroker, type TestBroker } from "../helpers/broker";
import { createTestDatabase, type TestDatabase } from "../helpers/database";

const ADMIN_KEY = "db-unavailable-admin-key-0123456789";

/** A TCP relay to `target` that can refuse connections and cut the open ones. */
class Relay {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async open(): Promise<void> {
    if (this.server) return;
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => s.destroy());
      }
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

const onPostgres = Boolean(process.env.TEST_DATABASE_URL);
const suite = onPostgres ? describe : describe.skip;
if (!onPostgres) console.log("[tests] database-unavailable: skipped, it needs TEST_DATABASE_URL (a PostgreSQL reached over TCP)");

suite("PostgreSQL unreachable", () => {
  let database: TestDatabase;
  let relay: Relay;
  let t: TestBroker;
  let base: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    const url = new URL(database.url);
    relay = new Relay({ host: url.hostname, port: Number(url.port || 5432) });
    await relay.open();
    url.hostname = "127.0.0.1";
    url.port = String(relay.port);
    t = await startTestBroker({ services: ["gateway", "clients", "crm"], database, env: { ADMIN_API_KEY: ADMIN_KEY, DATABASE_URL: url.toString() } });
    const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);
  afterAll(async () => {
    await relay?.open();
    await t?.stop();
    await relay?.close();
    await database?.drop();
  });

  const listCustomers = () => fetch(`${base}/api/v1/customers`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });

  it("when the database is down, then requests are 503 problems with Retry-After and /readyz is not ready; when it is back, they pass again", async () => {
    expect((await listCustomers()).status).toBe(200);

    await relay.close();
    // Cut connections (as in a restart), then refused ones: both are the same answer.
    for (let i = 0; i < 3; i++) {
      const res = await listCustomers();
      expect(res.status).toBe(503);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(res.headers.get("retry-after")).toBe("5");
      const problem = await res.json();
      expect(problem).toMatchObject({ type: "/problems/unavailable", status: 503 });
      expect(JSON.stringify(problem)).not.toMatch(/ECONNREFUSED|at .*\.js|Connection terminated/);
    }
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: Record<string, string> }).checks["crm.database"]).not.toBe("ok");

    await relay.open();
    expect((await listCustomers()).status).toBe(200);
  }, 30_000);
});
