/**
 * Cross-tenant requests generated from the OpenAPI document: for every operation, what each
 * tenant of a TenantWorld must be refused when it names another tenant's records — by path id,
 * by id inside the body — or calls an operation outside its scopes. What the generator must know
 * beyond the document (which collection a record belongs to, who may see it, which body field
 * names which record) sits in the two tables below; an operation or a body field they do not
 * cover is reported by `planIsolationProbes`, so a new route cannot be forgotten.
 */
import fc from "fast-check";
import type { Document } from "./openapi-schemas";
import {
  collectionOf,
  collectionOfParameter,
  fieldsOf,
  fillPath,
  namesARecord,
  RECORD_NAME,
  type BodyField,
  type Operation,
} from "./openapi-operations";
import { valuesOf } from "./schema-arbitrary";
import type { OwnedCollection, OwnedRecord, Tenant, TenantWorld } from "./tenant-world";

type Visibility =
  /** Records of one client; `staffScope` lets a client holding it see everyone's. */
  | { owned: true; staffScope?: string }
  /** The instance's records, guarded by the operation's scope only. */
  | { owned: false; someId: (w: TenantWorld) => number };

export const COLLECTIONS: Record<string, Visibility> = {
  orders: { owned: true, staffScope: "orders:manage" },
  contact_references: { owned: true },
  packaging_references: { owned: true },
  webhooks: { owned: true },
  deliveries: { owned: true },
  recoveries: { owned: true },
  // The events feed: a client's own events (every client's order events with orders:manage); no path id.
  events: { owned: true, staffScope: "orders:manage" },
  portal_sessions: { owned: true },
  order_imports: { owned: true },
  contacts: { owned: false, someId: (w) => w.crm.admin.contactId },
  customers: { owned: false, someId: (w) => w.crm.admin.customerId },
  products: { owned: false, someId: (w) => w.productId },
  packagings: { owned: false, someId: (w) => w.packagingIds[0] },
  clients: { owned: false, someId: (w) => w.tenants.A.clientId },
  // Public documents and probes: no record of anyone's.
  "openapi.json": { owned: false, someId: () => 1 },
  docs: { owned: false, someId: () => 1 },
  portal: { owned: false, someId: () => 1 },
  healthz: { owned: false, someId: () => 1 },
  readyz: { owned: false, someId: () => 1 },
  metrics: { owned: false, someId: () => 1 },
};

interface BodyIdRule {
  collection: string;
  /** The scope this way of naming a record needs (docs/api.md, Authentication and scopes: `contact.id` needs `crm`). */
  modeScope?: string;
  /** How a record is spelt in this field: its id, or also the owner's own code. */
  spellings: (r: OwnedRecord) => (string | number)[];
}

const byId = (r: OwnedRecord) => [r.id];
const byIdOrCode = (r: OwnedRecord) => [r.id, ...(r.code ? [r.code] : [])];

export const BODY_IDS: Record<string, BodyIdRule> = {
  "contact.id": { collection: "contacts", modeScope: "crm", spellings: byId },
  "contact.internalReferenceId": { collection: "contact_references", modeScope: "partner", spellings: byId },
  "contact.externalReferenceId": { collection: "contact_references", modeScope: "partner", spellings: byIdOrCode },
  "items[].packaging": { collection: "packagings", modeScope: "catalogue", spellings: byId },
  "items[].internalReferenceId": { collection: "packaging_references", modeScope: "partner", spellings: byId },
  "items[].externalReferenceId": { collection: "packaging_references", modeScope: "partner", spellings: byIdOrCode },
  customerId: { collection: "customers", spellings: byId },
  productId: { collection: "products", spellings: byId },
  packagingId: { collection: "packagings", spellings: byId },
  clientId: { collection: "clients", spellings: byId },
};

/** Fields named like ids that hold the caller's own code, not another record: the matching-data requests exercise them. */
export const CALLER_CODES = new Set(["externalId"]);

export interface Probe {
  /** Why the request must be refused, for the failure message. */
  label: string;
  actor: Tenant;
  method: string;
  path: string;
  body?: unknown;
  expected: number[];
}

export interface Plan {
  probes: Probe[];
  /** Operations (and body fields) no rule covers. */
  uncovered: string[];
}

const SEED = 20261123;

/** A body the schema accepts, always the same for one operation. */
function sampleBody(document: Document, op: Operation): unknown {
  return op.body ? fc.sample(valuesOf(document, op.body.schema), { numRuns: 1, seed: SEED })[0] : undefined;
}

function baseBody(document: Document, op: Operation, actor: Tenant): Record<string, unknown> {
  return op.key === "POST /api/v1/orders"
    ? structuredClone(actor.orderBody)
    : (sampleBody(document, op) as Record<string, unknown>);
}

/** `body` with the field at `steps` set to `value`, in place of whatever the same object used to name a record. */
export function withField(body: Record<string, unknown>, field: BodyField, value: unknown): Record<string, unknown> {
  const [head, ...rest] = field.steps;
  const copy = structuredClone(body);
  if (rest.length === 0) return { ...copy, [head]: value };
  const isArray = rest[0] === "[]";
  const holderBase = (isArray ? (copy[head] as Record<string, unknown>[] | undefined)?.[0] : copy[head]) ?? {};
  // The holder keeps its data (orderedQuantity) and drops the ways it named a record, so exactly one names one.
  const holder: Record<string, unknown> = Object.fromEntries(
    Object.entries(holderBase).filter(([k]) => !RECORD_NAME.test(k)),
  );
  const inner = withField(holder, { ...field, steps: isArray ? rest.slice(1) : rest }, value);
  copy[head] = isArray ? [inner] : inner;
  return copy;
}

function fitsType(field: BodyField, value: string | number): (string | number) | null {
  const type = field.schema.type;
  if (type === "integer" || type === "number") return typeof value === "number" ? value : null;
  if (type === "string") return String(value);
  return value;
}

const others = (w: TenantWorld, t: Tenant) => Object.values(w.tenants).filter((o) => o.name !== t.name);
const sees = (t: Tenant, v: Visibility) => v.owned && v.staffScope !== undefined && t.scopes.includes(v.staffScope);

export function planIsolationProbes(document: Document, operations: Operation[], world: TenantWorld): Plan {
  const probes: Probe[] = [];
  const uncovered: string[] = [];
  for (const op of operations) {
    const collections = [
      collectionOf(op.template),
      ...op.parameters.filter((p) => p.in === "path").map((p) => collectionOfParameter(op.template, p.name)),
    ];
    const unknown = collections.filter((c) => !(c in COLLECTIONS));
    if (unknown.length > 0) {
      uncovered.push(`${op.key}: collection(s) ${unknown.join(", ")} not in COLLECTIONS`);
      continue;
    }
    // An import's lines are refused in its results, not in the answer (test/e2e/order-imports.test.ts): no body probes.
    const fields =
      op.body && op.body.mediaType === "application/json"
        ? uniqueByPath(fieldsOf(document, op.body.schema).filter(namesARecord))
        : [];
    const unknownFields = fields.filter((f) => !(f.path in BODY_IDS) && !CALLER_CODES.has(f.path));
    if (unknownFields.length > 0) {
      uncovered.push(`${op.key}: body field(s) ${unknownFields.map((f) => f.path).join(", ")} not in BODY_IDS`);
      continue;
    }
    probes.push(
      ...scopeProbes(document, op, world),
      ...pathProbes(document, op, world),
      ...bodyProbes(document, op, world, fields),
    );
  }
  return { probes, uncovered };
}

/** oneOf branches repeat the fields they share. */
function uniqueByPath(fields: BodyField[]): BodyField[] {
  return [...new Map(fields.map((f) => [f.path, f])).values()];
}

/** A real id for each path parameter: another tenant's record where there is one, else the instance's. */
function someIds(op: Operation, world: TenantWorld, actor: Tenant): Record<string, string> {
  const victim = others(world, actor)[0];
  return Object.fromEntries(
    op.parameters
      .filter((p) => p.in === "path")
      .map((p) => {
        const collection = collectionOfParameter(op.template, p.name);
        const v = COLLECTIONS[collection];
        const id = v.owned
          ? (victim.records[collection as OwnedCollection][0] ?? actor.records[collection as OwnedCollection][0]).id
          : v.someId(world);
        return [p.name, String(id)];
      }),
  );
}

/** Every tenant lacking the operation's scope is refused with 403, whatever it names. */
function scopeProbes(document: Document, op: Operation, world: TenantWorld): Probe[] {
  if (op.scope === null) return [];
  return Object.values(world.tenants)
    .filter((t) => !t.scopes.includes(op.scope!))
    .map((actor) => ({
      label: `${actor.name} lacks scope ${op.scope}`,
      actor,
      method: op.method,
      path: fillPath(op.template, someIds(op, world, actor)),
      body: op.body ? sampleBody(document, op) : undefined,
      expected: [403],
    }));
}

/** Another tenant's record in the path: 404 (403 without the scope), never its data. */
/** Each names another tenant's record in the path, with a valid body where the operation takes one (so only the path can be wrong). */
function pathProbes(document: Document, op: Operation, world: TenantWorld): Probe[] {
  const params = op.parameters.filter((p) => p.in === "path");
  if (params.length === 0) return [];
  const first = collectionOfParameter(op.template, params[0].name) as OwnedCollection;
  const visibility = COLLECTIONS[first];
  if (!visibility.owned) return [];
  const probes: Probe[] = [];
  for (const actor of Object.values(world.tenants)) {
    if (sees(actor, visibility)) continue;
    const expected = op.scope && !actor.scopes.includes(op.scope) ? [403] : [404];
    for (const victim of others(world, actor)) {
      for (const record of victim.records[first]) {
        if (params.length === 1) {
          probes.push({
            label: `${actor.name} names ${victim.name}'s ${first} ${record.id}`,
            actor,
            method: op.method,
            path: fillPath(op.template, { [params[0].name]: String(record.id) }),
            body: op.body ? sampleBody(document, op) : undefined,
            expected,
          });
          continue;
        }
        // A child of the victim's record, under the victim's record and under the actor's own.
        const child = collectionOfParameter(op.template, params[1].name) as OwnedCollection;
        for (const c of victim.records[child].filter((r) => r.parentId === record.id)) {
          for (const parent of [record, ...actor.records[first]]) {
            probes.push({
              label: `${actor.name} names ${victim.name}'s ${child} ${c.id} under ${parent === record ? victim.name : actor.name}'s ${first} ${parent.id}`,
              actor,
              method: op.method,
              path: fillPath(op.template, { [params[0].name]: String(parent.id), [params[1].name]: String(c.id) }),
              body: op.body ? sampleBody(document, op) : undefined,
              expected,
            });
          }
        }
      }
    }
  }
  return probes;
}

/** Another tenant's record named inside the body: 422 (403 without the scope of the operation or of that way of naming). */
function bodyProbes(document: Document, op: Operation, world: TenantWorld, fields: BodyField[]): Probe[] {
  const probes: Probe[] = [];
  for (const field of fields.filter((f) => f.path in BODY_IDS)) {
    const rule = BODY_IDS[field.path];
    const visibility = COLLECTIONS[rule.collection];
    if (!visibility.owned) continue;
    for (const actor of Object.values(world.tenants)) {
      if (sees(actor, visibility)) continue;
      const lacks = [op.scope, rule.modeScope].filter((s): s is string => !!s && !actor.scopes.includes(s));
      for (const victim of others(world, actor)) {
        for (const record of victim.records[rule.collection as OwnedCollection]) {
          for (const spelling of rule.spellings(record)) {
            const value = fitsType(field, spelling);
            if (value === null) continue;
            probes.push({
              label: `${actor.name} names ${victim.name}'s ${rule.collection} ${record.id} as ${field.path}=${JSON.stringify(value)}`,
              actor,
              method: op.method,
              path: fillPath(op.template, someIds(op, world, actor)),
              body: withField(baseBody(document, op, actor), field, value),
              expected: lacks.length > 0 ? [403] : [422],
            });
          }
        }
      }
    }
  }
  return probes;
}
