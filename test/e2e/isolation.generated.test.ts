/**
 * Tenants are kept apart on EVERY route of the OpenAPI document. Two partners (A, B) and a back
 * office (C) each own orders, webhook subscriptions and deliveries, the partners also contact and
 * packaging references. For every operation the document lists, requests are generated
 * (test/helpers/isolation-probes.ts) that name another tenant's records — in the path, in the
 * body — or call outside the caller's scopes; each must be refused with the documented 4xx and
 * change nothing any tenant reads. Requests carrying data that matches another tenant's records
 * (its externalId, Idempotency-Key, e-mail, externalReference, webhook url) may only ever reach
 * the caller's own records. Runs on the distributed cluster when TEST_NATS_URL is set.
 */
import { startCluster, type Cluster } from "../helpers/cluster";
import { api, ContractViolation, type ApiClient } from "../helpers/http";
import { operationsOf, collectionOf, listedCollectionOf, type Operation } from "../helpers/openapi-operations";
import { COLLECTIONS, planIsolationProbes, type Plan } from "../helpers/isolation-probes";
import {
  createTenantWorld,
  differences,
  readsOfAll,
  type Tenant,
  type TenantName,
  type TenantWorld,
} from "../helpers/tenant-world";
import { alwaysOk, startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";
import { ADDRESS } from "../helpers/fixtures";
import { clusterEnv } from "../helpers/cluster-env";

let cluster: Cluster;
let receiver: WebhookReceiver;
let admin: ApiClient;
let world: TenantWorld;
let operations: Operation[];
let plan: Plan;
const tally = { cases: 0, serverErrors: 0, refusalsWithChanges: 0 };

beforeAll(async () => {
  receiver = await startReceiver(alwaysOk);
  cluster = await startCluster({ env: clusterEnv() });
  admin = api(cluster.baseUrl).as(cluster.adminKey);
  const contract = await admin.contract();
  operations = operationsOf(contract.document);
  world = await createTenantWorld(admin, receiver.url);
  plan = planIsolationProbes(contract.document, operations, world);
}, 240_000);

afterAll(async () => {
  console.log(
    `[isolation.generated] cases run: ${tally.cases}, 5xx seen: ${tally.serverErrors}, refusals with changes: ${tally.refusalsWithChanges}`,
  );
  await cluster?.stop();
  await receiver?.close();
});

interface Outcome {
  status: number;
  body: unknown;
  /** Set when the answer breaks the document (the http helper's check). */
  violation?: string;
}

async function send(
  client: ApiClient,
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
): Promise<Outcome> {
  tally.cases += 1;
  try {
    const r = await client.request({ method, path, body, headers });
    if (r.status >= 500) tally.serverErrors += 1;
    return { status: r.status, body: r.body };
  } catch (err) {
    if (!(err instanceof ContractViolation)) throw err;
    const status = Number(/document: (\d{3})/.exec(err.message)?.[1] ?? 0);
    if (status >= 500) tally.serverErrors += 1;
    return { status, body: null, violation: err.message };
  }
}

function describeOutcome(o: Outcome): string {
  return o.violation ?? `${o.status} ${JSON.stringify(o.body).slice(0, 300)}`;
}

it("when the document is read, then every route is covered by a generator of cross-tenant requests", () => {
  expect(plan.uncovered).toEqual([]);
  // A stale table would probe nothing: each operation on another tenant's records, and each one outside some tenant's scopes, has its requests.
  const probedBy = (op: Operation) =>
    plan.probes.some(
      (p) => p.method === op.method && new RegExp(`^${op.template.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(p.path),
    );
  const mustBeProbed = operations.filter(
    (op) =>
      (op.parameters.some((p) => p.in === "path") && COLLECTIONS[collectionOf(op.template)]?.owned) ||
      (op.scope !== null && Object.values(world.tenants).some((t) => !t.scopes.includes(op.scope!))),
  );
  expect(mustBeProbed.filter((op) => !probedBy(op)).map((op) => op.key)).toEqual([]);
});

it("when a tenant names another tenant's records or calls outside its scopes, then it is refused with the documented 4xx and nothing anyone reads changes", async () => {
  const before = await readsOfAll(world);
  const wrong: string[] = [];
  for (const probe of plan.probes) {
    const outcome = await send(probe.actor.client, probe.method, probe.path, probe.body);
    if (outcome.violation || !probe.expected.includes(outcome.status)) {
      wrong.push(
        `${probe.method} ${probe.path} (${probe.label}${probe.body ? `, body ${JSON.stringify(probe.body).slice(0, 200)}` : ""}): expected ${probe.expected.join("/")}, got ${describeOutcome(outcome)}`,
      );
    }
  }
  const changed = differences(before, await readsOfAll(world));
  if (changed.length > 0) tally.refusalsWithChanges += 1;
  console.log(
    `[isolation.generated] ${plan.probes.length} cross-tenant requests, ${wrong.length} answered wrongly, ${changed.length} reads changed`,
  );
  expect(wrong).toEqual([]);
  expect(changed).toEqual([]);
}, 300_000);

it("when each tenant reads a list, then it holds only its own records", async () => {
  const leaks: string[] = [];
  const lists = operations.filter(
    (o) =>
      o.method === "GET" &&
      !o.template.includes("{") &&
      o.parameters.some((p) => p.name === "limit") &&
      COLLECTIONS[listedCollectionOf(o.template)]?.owned,
  );
  expect(lists.length).toBeGreaterThan(0);
  for (const op of lists) {
    // `/webhooks/deliveries` lists deliveries (of every subscription of the caller), not subscriptions.
    const collection = listedCollectionOf(op.template) as keyof Tenant["records"];
    for (const t of Object.values(world.tenants)) {
      const visibility = COLLECTIONS[collection];
      if (op.scope && !t.scopes.includes(op.scope)) continue;
      if (visibility.owned && visibility.staffScope && t.scopes.includes(visibility.staffScope)) continue;
      const outcome = await send(t.client, "GET", `${op.template}?limit=500`);
      if (outcome.violation || outcome.status !== 200) {
        leaks.push(`${t.name} GET ${op.template}: ${describeOutcome(outcome)}`);
        continue;
      }
      const own = new Set(t.records[collection]?.map((r) => r.id) ?? []);
      const foreign = (outcome.body as { id?: unknown }[]).filter(
        (item) => typeof item.id === "number" && !own.has(item.id),
      );
      if (foreign.length > 0)
        leaks.push(
          `${t.name} GET ${op.template} shows records it does not own: ${foreign.map((f) => f.id).join(", ")}`,
        );
    }
  }
  expect(leaks).toEqual([]);
}, 120_000);

interface MatchingProbe {
  label: string;
  actor: TenantName;
  victim: TenantName | "admin";
  method: string;
  path: string;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
  /** The answer may be the caller's own new record (201) or a refusal; never the victim's. */
  expected: number[];
  /** Ids of the victim that must not appear at these places of the answer. */
  notVictims: { at: string; ids: number[] }[];
}

function valueAt(body: unknown, at: string): unknown {
  return at
    .split(".")
    .reduce<unknown>(
      (v, k) => (typeof v === "object" && v !== null ? (v as Record<string, unknown>)[k] : undefined),
      body,
    );
}

/** Requests by `actor` carrying data that matches the records of `victim` (another partner, or the admin's CRM contact). */
function matchingProbes(w: TenantWorld, actorName: "A" | "B", victimName: "A" | "B" | "admin"): MatchingProbe[] {
  const actor = w.tenants[actorName];
  const crm = w.crm[victimName];
  const other = victimName === "admin" ? null : w.tenants[victimName];
  const tag = `${actorName}-${victimName}-${Date.now().toString(36)}`;
  const inlineContact = {
    contact: {
      externalReference: crm.externalReference ?? `REF-${tag}`,
      firstName: "Mallory",
      lastName: `Renamed ${tag}`,
      email: crm.email,
    },
    customer: { name: crm.customerName },
  };
  const crmIds = [
    { at: "contact.id", ids: [crm.contactId] },
    { at: "customer.id", ids: [crm.customerId] },
  ];
  const probes: MatchingProbe[] = [
    {
      label: "inline contact with the victim's e-mail, reference and customer name",
      actor: actorName,
      victim: victimName,
      method: "POST",
      path: "/api/v1/orders",
      body: {
        ...inlineContact,
        invoicingAddress: ADDRESS,
        deliveryAddress: ADDRESS,
        items: (actor.orderBody as { items: unknown[] }).items,
      },
      expected: [201, 422],
      notVictims: crmIds,
    },
    {
      label: "contact reference with the victim's e-mail, reference and customer name",
      actor: actorName,
      victim: victimName,
      method: "POST",
      path: "/api/v1/contact_references",
      // 200 too: the inline-contact order above already registered this reference for the actor,
      // so sending it again updates the actor's own record; notVictims proves it is not the victim's.
      body: inlineContact,
      expected: [200, 201, 422],
      notVictims: [{ at: "id", ids: other?.records.contact_references.map((r) => r.id) ?? [] }, ...crmIds],
    },
  ];
  if (other) {
    const order = other.records.orders[0];
    probes.push(
      {
        label: "order with the victim's externalId",
        actor: actorName,
        victim: victimName,
        method: "POST",
        path: "/api/v1/orders",
        body: { ...actor.orderBody, externalId: order.code },
        expected: [201],
        notVictims: [{ at: "id", ids: [order.id] }],
      },
      {
        label: "order with the victim's Idempotency-Key",
        actor: actorName,
        victim: victimName,
        method: "POST",
        path: "/api/v1/orders",
        body: { ...actor.orderBody, externalId: `${order.code}-${tag}` },
        headers: { "Idempotency-Key": other.idempotencyKey },
        expected: [201],
        notVictims: [{ at: "id", ids: [order.id] }],
      },
    );
    for (const s of other.records.webhooks) {
      const [event, url] = s.code!.split(" ");
      probes.push({
        label: `webhook subscription with the victim's event and url (${event})`,
        actor: actorName,
        victim: victimName,
        method: "PUT",
        path: "/api/v1/webhooks",
        body: { event, url },
        expected: [201],
        notVictims: [{ at: "id", ids: [s.id] }],
      });
    }
  }
  return probes;
}

it("when a tenant sends data matching another tenant's records, then it only ever reaches its own, and the other's reads do not change", async () => {
  const wrong: string[] = [];
  let count = 0;
  for (const [actor, victim] of [
    ["B", "A"],
    ["A", "B"],
    ["B", "admin"],
  ] as const) {
    const before = await readsOfAll(world, actor);
    for (const probe of matchingProbes(world, actor, victim)) {
      count += 1;
      const outcome = await send(world.tenants[actor].client, probe.method, probe.path, probe.body, probe.headers);
      const where = `${actor} → ${victim}: ${probe.label} (${probe.method} ${probe.path} ${JSON.stringify(probe.body).slice(0, 200)})`;
      if (outcome.violation || !probe.expected.includes(outcome.status))
        wrong.push(`${where}: expected ${probe.expected.join("/")}, got ${describeOutcome(outcome)}`);
      for (const { at, ids } of probe.notVictims) {
        const value = valueAt(outcome.body, at);
        if (typeof value === "number" && ids.includes(value))
          wrong.push(`${where}: the answer's ${at} is the victim's ${value}`);
      }
    }
    const changed = differences(before, await readsOfAll(world, actor));
    if (changed.length > 0) tally.refusalsWithChanges += 1;
    wrong.push(...changed.map((c) => `${actor} → ${victim} changed what the others read: ${c}`));
  }
  console.log(`[isolation.generated] ${count} matching-data requests, ${wrong.length} findings`);
  expect(wrong).toEqual([]);
}, 180_000);
