/**
 * Issue 25, part 1: sign-in links to the subscriber portal and the sessions they become, through
 * the real gateway and clients service. A link is used once, before it expires; the session
 * reaches the client's webhooks and nothing else; sessions are listed, revoked one by one, and
 * revoked with their client.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Knex } from "knex";
import { openDatabase } from "../../shared/database/db";
import { startTestBroker, type TestBroker } from "../helpers/broker";
import { EVENTUALLY_MS } from "../helpers/deadlines";

const ADMIN_KEY = "portal-sessions-admin-key-0123456789";

interface LinkJson {
  id: number;
  url: string;
  expiresAt: string;
}
interface SessionJson {
  id: number;
  token: string;
  expiresAt: string;
  client: { id: number; name: string };
}
interface PortalSessionJson {
  id: number;
  state: string;
  signedInAt: string | null;
  revokedAt: string | null;
}

describe("portal sessions: sign-in links, what a session reaches, revocation", () => {
  let t: TestBroker;
  let db: Knex;
  let base: string;
  let seq = 0;

  beforeAll(async () => {
    t = await startTestBroker({
      services: ["gateway", "clients", "webhooks", "orders", "references", "crm", "catalogue"],
      env: { ADMIN_API_KEY: ADMIN_KEY, PUBLIC_BASE_URL: "https://orders.example.com" },
    });
    db = openDatabase(t.database.url);
    const server = (t.broker.getLocalService("gateway") as unknown as { server: Server }).server;
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await db?.destroy();
    await t?.stop();
  });

  const http = async <T = unknown>(key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
  };

  async function newClient(kind = "backoffice"): Promise<{ id: number; apiKey: string }> {
    const res = await http<{ id: number; apiKey: string }>(ADMIN_KEY, "POST", "/clients", {
      name: `portal ${Date.now()}-${seq++}`,
      kind,
    });
    expect(res.status).toBe(201);
    return res.body;
  }
  const linkTokenOf = (link: LinkJson) => new URL(link.url).hash.replace(/^#link=/, "");
  async function mint(apiKey: string): Promise<LinkJson> {
    const res = await http<LinkJson>(apiKey, "POST", "/portal_sessions");
    expect(res.status).toBe(201);
    return res.body;
  }
  async function signIn(apiKey: string): Promise<SessionJson> {
    const res = await http<SessionJson>(linkTokenOf(await mint(apiKey)), "POST", "/portal_sessions/exchange");
    expect(res.status).toBe(200);
    return res.body;
  }
  /** Answers change within the principal cache's second: asked again until they do. */
  async function eventuallyStatus(key: string, path: string, status: number): Promise<void> {
    const deadline = Date.now() + EVENTUALLY_MS;
    for (;;) {
      const last = (await http(key, "GET", path)).status;
      if (last === status) return;
      if (Date.now() > deadline) throw new Error(`GET ${path} stayed ${last}, never ${status}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it("when a client mints a link, then it is the portal's URL with a one-time token in the fragment, valid 15 minutes", async () => {
    const client = await newClient();
    const before = Date.now();
    const link = await mint(client.apiKey);
    const url = new URL(link.url);
    expect(`${url.origin}${url.pathname}${url.search}`).toBe("https://orders.example.com/portal");
    expect(url.hash).toMatch(/^#link=oipl_[A-Za-z0-9_-]{43}$/);
    const ttl = Date.parse(link.expiresAt) - before;
    expect(ttl).toBeGreaterThan(14 * 60_000);
    expect(ttl).toBeLessThanOrEqual(15 * 60_000 + 5_000);
    // The token is stored as its digest only.
    const row = await db.withSchema("clients").table("portal_sessions").where({ id: link.id }).first();
    expect(JSON.stringify(row)).not.toContain(linkTokenOf(link));
  });

  it("when the link is exchanged, then the session lasts an hour and reaches the client's webhooks, and nothing else", async () => {
    const client = await newClient();
    const before = Date.now();
    const session = await signIn(client.apiKey);
    expect(session.token).toMatch(/^oips_/);
    expect(session.client.id).toBe(client.id);
    expect(Date.parse(session.expiresAt) - before).toBeGreaterThan(59 * 60_000);

    expect((await http(session.token, "GET", "/webhooks")).status).toBe(200);
    expect((await http(session.token, "GET", "/webhooks/event_types")).status).toBe(200);
    const created = await http<{ id: number }>(session.token, "PUT", "/webhooks", {
      event: "sales_order_created",
      url: "http://127.0.0.1:9/portal",
    });
    expect(created.status).toBe(201);
    expect((await http(session.token, "GET", `/webhooks/${created.body.id}/stats`)).status).toBe(200);
    // The client's own key sees what the session made: one client.
    expect((await http(client.apiKey, "GET", `/webhooks/${created.body.id}`)).status).toBe(200);

    for (const path of ["/orders", "/contact_references", "/packaging_references", "/contacts", "/clients"])
      expect([path, (await http(session.token, "GET", path)).status]).toEqual([path, 403]);
    // A session cannot mint links (it would never end) nor list the client's sessions.
    expect((await http(session.token, "POST", "/portal_sessions")).status).toBe(403);
    expect((await http(session.token, "GET", "/portal_sessions")).status).toBe(403);
  });

  it("when a link is used twice, then the second exchange is refused; and the link itself reaches nothing but the exchange", async () => {
    const client = await newClient();
    const token = linkTokenOf(await mint(client.apiKey));
    expect((await http(token, "GET", "/webhooks")).status).toBe(403);
    expect((await http(token, "POST", "/portal_sessions/exchange")).status).toBe(200);
    expect((await http(token, "POST", "/portal_sessions/exchange")).status).toBe(401);
    // An API key or a session is not a link.
    expect((await http(client.apiKey, "POST", "/portal_sessions/exchange")).status).toBe(403);
  });

  it("when a link has expired or was revoked, then it is refused", async () => {
    const client = await newClient();
    const expired = await mint(client.apiKey);
    await db
      .withSchema("clients")
      .table("portal_sessions")
      .where({ id: expired.id })
      .update({ link_expires_at: db.raw("now() - interval '1 second'") });
    expect((await http(linkTokenOf(expired), "POST", "/portal_sessions/exchange")).status).toBe(401);

    const revoked = await mint(client.apiKey);
    expect((await http(client.apiKey, "DELETE", `/portal_sessions/${revoked.id}`)).status).toBe(200);
    expect((await http(linkTokenOf(revoked), "POST", "/portal_sessions/exchange")).status).toBe(401);
  });

  it("when a session expires, then it is refused", async () => {
    const client = await newClient();
    const session = await signIn(client.apiKey);
    expect((await http(session.token, "GET", "/webhooks")).status).toBe(200);
    await db
      .withSchema("clients")
      .table("portal_sessions")
      .where({ id: session.id })
      .update({ expires_at: db.raw("now() - interval '1 second'") });
    await eventuallyStatus(session.token, "/webhooks", 401);
  });

  it("when the client lists and revokes its sessions, then the revoked one is refused at once, and a session can sign itself out but touch no other", async () => {
    const client = await newClient();
    const first = await signIn(client.apiKey);
    const second = await signIn(client.apiKey);
    const other = await signIn((await newClient()).apiKey);
    const listed = await http<PortalSessionJson[]>(client.apiKey, "GET", "/portal_sessions");
    expect(listed.status).toBe(200);
    expect(listed.body.map((s) => [s.id, s.state])).toEqual([
      [second.id, "session"],
      [first.id, "session"],
    ]);

    const revoked = await http<PortalSessionJson>(client.apiKey, "DELETE", `/portal_sessions/${first.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revokedAt).not.toBeNull();
    await eventuallyStatus(first.token, "/webhooks", 401);
    expect((await http(client.apiKey, "DELETE", `/portal_sessions/${other.id}`)).status).toBe(404);

    expect((await http(second.token, "DELETE", `/portal_sessions/${other.id}`)).status).toBe(404);
    expect((await http(second.token, "DELETE", `/portal_sessions/${second.id}`)).status).toBe(200);
    await eventuallyStatus(second.token, "/webhooks", 401);
    expect((await http(other.token, "GET", "/webhooks")).status).toBe(200);
  });

  it("when the client is revoked, then its sessions and unused links are refused and recorded as revoked", async () => {
    const client = await newClient();
    const session = await signIn(client.apiKey);
    const link = await mint(client.apiKey);
    expect((await http(ADMIN_KEY, "DELETE", `/clients/${client.id}`)).status).toBe(200);
    await eventuallyStatus(session.token, "/webhooks", 401);
    expect((await http(linkTokenOf(link), "POST", "/portal_sessions/exchange")).status).toBe(401);
    const rows: { revoked_at: Date | null }[] = await db
      .withSchema("clients")
      .table("portal_sessions")
      .whereIn("id", [session.id, link.id]);
    expect(rows.map((r) => r.revoked_at)).toEqual([expect.any(Date), expect.any(Date)]);
  });
});
