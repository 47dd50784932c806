/**
 * Demo data for the quick start. With DEMO_DATA=auto, an embedded start on a database without
 * the demo seeds it; DEMO_DATA=always seeds it in any mode, and when it exists already gives the
 * demo clients fresh keys (a key is shown only once, so a restart must issue new ones).
 * Everything goes through the services' actions, as an admin client would do it.
 */
import type { ServiceBroker } from "moleculer";
import { API_PREFIX } from "../../gateway/routes";
import { SCOPES, type Principal } from "../../shared/security/auth";
import type { Config } from "../../shared/config/config";
import type { ServiceName } from "../../shared/config/variables";
import { MAX_LIMIT, type Page } from "../../shared/http/paging";
import { demoBanner } from "./demo-banner";
import {
  DEMO_CLIENTS,
  DEMO_CONTACT_REFERENCE,
  DEMO_CONTACTS,
  DEMO_PACKAGING_REFERENCES,
  DEMO_PACKAGINGS,
  DEMO_PRODUCTS,
  SAMPLE_PACKAGING_REFERENCES,
} from "./demo-data";

const SEEDER: Principal = {
  clientId: 0,
  name: "demo data seed",
  kind: "admin",
  scopes: [...SCOPES],
  webhookEvents: [],
};
const DEMO_SERVICES: ServiceName[] = ["clients", "crm", "catalogue", "references"];
const WAIT_FOR_SERVICES_MS = 30_000;
/** Keys are shown once, so a restart cannot show them again: it says how to get new ones. */
const DEMO_ALREADY_SEEDED =
  "Demo data: already there; its API keys were shown on the first start. DEMO_DATA=always issues fresh demo keys (the old ones stop working).";

type Call = <T>(action: string, params: object) => Promise<T>;
type ClientSpec = (typeof DEMO_CLIENTS)[keyof typeof DEMO_CLIENTS];
interface ClientJson {
  id: number;
  name: string;
  kind: string;
  revokedAt: string | null;
}
interface IssuedClient {
  id: number;
  apiKey: string;
}

/** Whether this process should seed, before asking any service. */
export function demoWanted(cfg: Config): boolean {
  if (cfg.demoData === "never") return false;
  if (!cfg.services.includes("catalogue") || !cfg.services.includes("references")) return false;
  // auto is for the embedded quick start, where every service runs in this process.
  if (cfg.demoData === "auto") return !cfg.transporter && DEMO_SERVICES.every((s) => cfg.services.includes(s));
  return true;
}

async function findClient(call: Call, spec: ClientSpec): Promise<ClientJson | null> {
  let cursor: string | null = null;
  do {
    const page: Page<ClientJson> = await call("clients.list", { limit: MAX_LIMIT, ...(cursor ? { cursor } : {}) });
    const found = page.items.find((c) => c.name === spec.name && c.kind === spec.kind && !c.revokedAt);
    if (found) return found;
    cursor = page.nextCursor;
  } while (cursor);
  return null;
}

/** A new client, or a new key for the existing one. */
async function issueClient(call: Call, spec: ClientSpec, existing: ClientJson | null): Promise<IssuedClient> {
  const issued = existing
    ? await call<IssuedClient>("clients.rotateKey", { id: existing.id })
    : await call<IssuedClient>("clients.create", { name: spec.name, kind: spec.kind });
  return { id: issued.id, apiKey: issued.apiKey };
}

/** Contacts (with their customers), products and packagings; answers packaging ids by demo key. */
async function seedCrmAndCatalogue(call: Call): Promise<Map<string, number>> {
  for (const contact of DEMO_CONTACTS) await call("crm.upsertContact", contact);
  const productIds = new Map<string, number>();
  for (const product of DEMO_PRODUCTS) {
    productIds.set(product.code, (await call<{ id: number }>("catalogue.createProduct", product)).id);
  }
  const packagingIds = new Map<string, number>();
  for (const { key, product, ...packaging } of DEMO_PACKAGINGS) {
    const created = await call<{ id: number }>("catalogue.createPackaging", {
      productId: productIds.get(product),
      ...packaging,
    });
    packagingIds.set(key, created.id);
  }
  return packagingIds;
}

async function seedPartnerReferences(call: Call, clientId: number, packagingIds: Map<string, number>): Promise<void> {
  for (const ref of DEMO_PACKAGING_REFERENCES) {
    await call("references.createPackagingReference", {
      clientId,
      externalReference: ref.externalReference,
      packagingId: packagingIds.get(ref.packaging),
      active: ref.active,
    });
  }
  await call("references.upsertContactReference", { clientId, ...DEMO_CONTACT_REFERENCE });
}

/** The ids the back office sample order uses, read through the partner's references. */
async function sampleIds(call: Call, partnerId: number): Promise<{ contactId: number; packagingIds: number[] }> {
  const contact = await call<{ contact: { id: number } } | null>("references.resolveContact", {
    clientId: partnerId,
    by: "external",
    value: DEMO_CONTACT_REFERENCE.contact.externalReference,
  });
  const packagings = await call<({ packaging: { id: number } } | null)[]>("references.resolvePackagings", {
    clientId: partnerId,
    refs: SAMPLE_PACKAGING_REFERENCES.map((value) => ({ by: "external", value })),
  });
  if (!contact || packagings.some((p) => !p)) {
    throw new Error(
      "The demo data is incomplete (a demo reference is missing); start on an empty database to seed it again.",
    );
  }
  return { contactId: contact.contact.id, packagingIds: packagings.map((p) => p!.packaging.id) };
}

async function seed(broker: ServiceBroker, cfg: Config): Promise<void> {
  await broker.waitForServices(DEMO_SERVICES, WAIT_FOR_SERVICES_MS);
  const call: Call = (action, params) => broker.call(action, params, { meta: { client: SEEDER } });
  const backoffice = await findClient(call, DEMO_CLIENTS.backoffice);
  if (backoffice && cfg.demoData === "auto") {
    console.log(DEMO_ALREADY_SEEDED);
    return;
  }
  const partnerClient = await findClient(call, DEMO_CLIENTS.partner);

  let partner: IssuedClient;
  if (backoffice) {
    partner = await issueClient(call, DEMO_CLIENTS.partner, partnerClient);
  } else {
    const packagingIds = await seedCrmAndCatalogue(call);
    partner = await issueClient(call, DEMO_CLIENTS.partner, partnerClient);
    await seedPartnerReferences(call, partner.id, packagingIds);
  }
  // The back office client marks the demo as seeded, so it is issued last.
  const backofficeIssued = await issueClient(call, DEMO_CLIENTS.backoffice, backoffice);

  const ids = await sampleIds(call, partner.id);
  console.log(
    demoBanner({
      baseUrl: `http://localhost:${cfg.port}${API_PREFIX}`,
      backofficeKey: backofficeIssued.apiKey,
      partnerKey: partner.apiKey,
      contactId: ids.contactId,
      packagingIds: ids.packagingIds,
      contactReference: DEMO_CONTACT_REFERENCE.contact.externalReference,
      packagingReferences: [...SAMPLE_PACKAGING_REFERENCES],
    }),
  );
}

/**
 * Whether `npm run start:cluster` seeds the demo: it runs every service on this machine as a
 * local trial, like `npm start`, so `auto` seeds there too (its own broker, cluster-demo.ts).
 */
export function clusterDemoWanted(cfg: Config): boolean {
  return cfg.demoData !== "never" && DEMO_SERVICES.every((s) => cfg.services.includes(s));
}

/** Seeds when wanted; a failure is logged and the API keeps running without the demo. */
export async function seedDemoDataIfWanted(broker: ServiceBroker, cfg: Config): Promise<void> {
  if (!demoWanted(cfg)) return;
  await seedDemoData(broker, cfg);
}

/** Seeds (or, with `always`, issues fresh keys) whatever the mode; a failure is logged, not thrown. */
export async function seedDemoData(broker: ServiceBroker, cfg: Config): Promise<void> {
  try {
    await seed(broker, cfg);
  } catch (err) {
    broker.logger.error("The demo data could not be seeded; the API runs without it.", err);
  }
}
