/**
 * 401 and 403 for every route of the table, over HTTP, with the gateway and the services in
 * separate processes over NATS.
 */
import { ROUTES, API_PREFIX } from "../../gateway/routes";
import { api, type ApiClient } from "../helpers/http";
import { startCluster, type Cluster } from "../helpers/cluster";

let cluster: Cluster;
let anonymous: ApiClient;
let powerless: ApiClient;

beforeAll(async () => {
  cluster = await startCluster();
  anonymous = api(cluster.baseUrl);
  const admin = anonymous.as(cluster.adminKey);
  // A client with no scope and no webhook event: every route must refuse it.
  const { status, body } = await admin.post<{ apiKey: string }>("/api/v1/clients", {
    name: "Nobody",
    kind: "partner",
    scopes: [],
    webhookEvents: [],
  });
  expect(status).toBe(201);
  powerless = anonymous.as(body.apiKey);
}, 120_000);
afterAll(() => cluster?.stop());

const concrete = (path: string) => API_PREFIX + path.replace(/:(\w+)/g, "1");
const call = (client: ApiClient, method: string, path: string) =>
  client.request({ method, path: concrete(path), ...(method === "GET" || method === "DELETE" ? {} : { body: {} }) });

describe.each(ROUTES.map((r) => [`${r.method} ${r.path}`, r] as const))("%s", (_name, route) => {
  it("when no API key is sent, then it is 401 with WWW-Authenticate", async () => {
    const r = await call(anonymous, route.method, route.path);
    expect(r.status).toBe(401);
    expect(r.headers["www-authenticate"]).toMatch(/^Bearer/);
    expect(r.headers["content-type"]).toMatch(/^application\/problem\+json/);
  });

  it("when the API key is unknown, then it is 401", async () => {
    expect((await call(anonymous.as("oik_not-a-real-key"), route.method, route.path)).status).toBe(401);
  });

  it("when the client lacks what the route needs, then it is 403", async () => {
    const r = await call(powerless, route.method, route.path);
    expect(r.status).toBe(403);
    expect((r.body as { type: string }).type).toBe("/problems/forbidden");
  });
});

describe("a revoked client", () => {
  it("when its key is revoked, then the next call is 401 at once", async () => {
    const admin = anonymous.as(cluster.adminKey);
    const { body } = await admin.post<{ id: number; apiKey: string }>("/api/v1/clients", {
      name: "Short-lived",
      kind: "backoffice",
    });
    const client = anonymous.as(body.apiKey);
    expect((await client.get("/api/v1/contacts")).status).toBe(200);
    expect((await admin.delete(`/api/v1/clients/${body.id}`)).status).toBe(200);
    // The gateway's principal cache is emptied by the clients.changed broadcast.
    await new Promise((r) => setTimeout(r, 300));
    expect((await client.get("/api/v1/contacts")).status).toBe(401);
  });
});
