/**
 * PostgreSQL unreachable (refused, or its connections cut as in a restart): every request that
 * needs it is a 503 problem with Retry-After, /readyz says the database is not ok, and it all
 * comes back once the database answers again. The services reach the test database through a
 * TCP relay this test opens and closes; the real server is never touched.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { startTestBroker, type TestBroker } from "../helpers/broker";
import { createTestDatabase, type TestDatabase } from "../helpers/database";
import { requires } from "../helpers/prerequisites";
import { TcpRelay } from "../helpers/tcp-relay";

const ADMIN_KEY = "db-unavailable-admin-key-0123456789";

// A PostgreSQL reached over TCP, which a relay can cut.
const suite = requires(["postgres"]).describe;

suite("PostgreSQL unreachable", () => {
  let database: TestDatabase;
  let relay: TcpRelay;
  let t: TestBroker;
  let base: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    const url = new URL(database.url);
    relay = new TcpRelay({ host: url.hostname, port: Number(url.port || 5432) });
    await relay.open();
    url.hostname = "127.0.0.1";
    url.port = String(relay.port);
    t = await startTestBroker({
      services: ["gateway", "clients", "crm"],
      database,
      env: { ADMIN_API_KEY: ADMIN_KEY, DATABASE_URL: url.toString() },
    });
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
