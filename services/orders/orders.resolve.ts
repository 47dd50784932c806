/**
 * Turns identification modes into snapshots by asking references, catalogue and crm, in as few
 * calls as the modes allow, for one order or a whole batch alike: every contact reference and
 * packaging reference of all the orders from one references call; catalogue ids add one
 * catalogue call beside it; CRM contacts one crm call. Whatever the number of orders and items
 * (a call carries at most 1,000 lookups; more are sent 1,000 at a time). Each call is saved when
 * earlier orders resolved the same records (orders.references-cache.ts). Every unknown or
 * unusable reference of an order is reported at once, each with its field path.
 */
import { InvalidInputError, unknownReferenceField, type FieldError } from "../../shared/errors";
import type { ContactMode, ItemMode, ReferenceLookup } from "./orders.identify";
import type { ItemInput } from "./orders.params";
import type {
  ContactReference,
  CrmContact,
  PackagingReference,
  ReferencesAnswer,
  ResolvedReferences,
} from "./orders.references-cache";
import type { NewItem } from "./orders.repository";
import type { ContactSnapshot, PackagingSnapshot } from "./orders.snapshots";

/** `ctx.call`, narrowed to what resolution needs. */
export type Call = <T>(action: string, params: object) => Promise<T>;

export interface ResolvedContact {
  contact: ContactSnapshot;
  customer: { id: number; name: string };
}

type InlineMode = Extract<ContactMode, { kind: "inline" }>;
type Lookup = Pick<ReferenceLookup, "by" | "value">;

/** The most lookups or ids one call to references, crm or catalogue carries (their params say so). */
const PER_CALL = 1000;

/** One order, as identify read it (orders.identify.ts). */
export interface OrderModes {
  items: ItemInput[];
  contact: ContactMode;
  itemModes: ItemMode[];
}

export interface Resolved {
  /** Null for the inline mode: that contact is registered only once the rest is known good. */
  contact: ResolvedContact | null;
  items: NewItem[];
}

function fromReference(ref: ContactReference): ResolvedContact {
  const { id, firstName, lastName, email } = ref.contact;
  return {
    contact: { id, firstName, lastName, email, reference: { id: ref.id, externalReference: ref.externalReference } },
    customer: ref.customer,
  };
}

function fromCrm(found: CrmContact): ResolvedContact {
  const { id, firstName, lastName, email } = found;
  return { contact: { id, firstName, lastName, email, reference: null }, customer: found.customer };
}

/** The inline mode: the partner's contact is registered (or refreshed) as its reference. */
export async function registerInlineContact(call: Call, clientId: number, mode: InlineMode): Promise<ResolvedContact> {
  const { reference } = await call<{ reference: ContactReference }>("references.upsertContactReference", {
    clientId,
    contact: mode.contact,
    customer: mode.customer,
  });
  return fromReference(reference);
}

function chunks<T>(list: T[]): T[][] {
  const out: T[][] = [];
  for (let at = 0; at < list.length; at += PER_CALL) out.push(list.slice(at, at + PER_CALL));
  return out;
}

/** `fetch` of every chunk of `ids`, one after the other, concatenated. */
async function inChunks<T>(ids: number[], fetch: (chunk: number[]) => Promise<T[]>): Promise<T[]> {
  const found: T[] = [];
  for (const chunk of chunks(ids)) found.push(...(await fetch(chunk)));
  return found;
}

const lookupOf = (ref: ReferenceLookup): Lookup => ({ by: ref.by, value: ref.value });

function referenceLookups(modes: ItemMode[]): Lookup[] {
  return modes.flatMap((m) => (m.kind === "reference" ? [lookupOf(m.ref)] : []));
}

/** The partner references of all the orders: one references call (per 1,000 packaging lookups). */
function partnerReferences(
  call: Call,
  kept: ResolvedReferences,
  clientId: number,
  contacts: Lookup[],
  refs: Lookup[],
): Promise<ReferencesAnswer> {
  if (contacts.length === 0 && refs.length === 0) return Promise.resolve({ contacts: [], packagings: [] });
  return kept.resolve(clientId, contacts, refs, async () => {
    const answer: ReferencesAnswer = { contacts: [], packagings: [] };
    const refChunks = refs.length > 0 ? chunks(refs) : [[]];
    for (const [i, chunk] of refChunks.entries()) {
      const part = await call<ReferencesAnswer>("references.resolveOrders", {
        clientId,
        contacts: i === 0 ? contacts : [],
        refs: chunk,
      });
      answer.contacts.push(...part.contacts);
      answer.packagings.push(...part.packagings);
    }
    return answer;
  });
}

function crmContacts(call: Call, kept: ResolvedReferences, ids: number[]): Promise<Map<number, CrmContact>> {
  if (ids.length === 0) return Promise.resolve(new Map<number, CrmContact>());
  return kept.crmContactsById(ids, (missing) =>
    inChunks(missing, (chunk) => call<CrmContact[]>("crm.contactsByIds", { ids: chunk })),
  );
}

async function cataloguePackagings(
  call: Call,
  kept: ResolvedReferences,
  ids: number[],
): Promise<Map<number, PackagingSnapshot>> {
  if (ids.length === 0) return new Map();
  const found = await kept.cataloguePackagingsById(ids, (missing) =>
    inChunks(missing, (chunk) => call<PackagingSnapshot[]>("catalogue.packagingsByIds", { ids: chunk })),
  );
  return new Map(found.map((p) => [p.id, p]));
}

const unique = <T>(values: T[]): T[] => [...new Set(values)];

/**
 * Each order's snapshots, or the 422 that names its unknown and unusable references, in the
 * orders' order. `kept`: what earlier orders resolved (orders.references-cache.ts). A call that
 * fails (a service unreachable) fails them all: it says nothing about any one order.
 */
export async function resolveOrders(
  call: Call,
  kept: ResolvedReferences,
  clientId: number,
  orders: OrderModes[],
): Promise<(Resolved | InvalidInputError)[]> {
  const contactRefs = orders.flatMap((o) => (o.contact.kind === "reference" ? [lookupOf(o.contact.ref)] : []));
  const crmIds = unique(orders.flatMap((o) => (o.contact.kind === "crm" ? [o.contact.id] : [])));
  const catalogueIds = unique(
    orders.flatMap((o) => o.itemModes.flatMap((m) => (m.kind === "catalogue" ? [m.packagingId] : []))),
  );
  const [references, crm, catalogue] = await Promise.all([
    partnerReferences(
      call,
      kept,
      clientId,
      contactRefs,
      orders.flatMap((o) => referenceLookups(o.itemModes)),
    ),
    crmContacts(call, kept, crmIds),
    cataloguePackagings(call, kept, catalogueIds),
  ]);
  let nextContact = 0;
  let nextPackaging = 0;
  return orders.map((order) => {
    const errors: FieldError[] = [];
    const count = referenceLookups(order.itemModes).length;
    const refs = references.packagings.slice(nextPackaging, (nextPackaging += count));
    const items = itemsFrom(order.items, order.itemModes, catalogue, refs, errors);
    const contactRef = order.contact.kind === "reference" ? references.contacts[nextContact++] : null;
    const contact = contactOf(order.contact, contactRef, crm, errors);
    return errors.length > 0 ? new InvalidInputError(errors) : { contact, items };
  });
}

function contactOf(
  mode: ContactMode,
  reference: ContactReference | null,
  crm: Map<number, CrmContact>,
  errors: FieldError[],
): ResolvedContact | null {
  if (mode.kind === "inline") return null;
  if (mode.kind === "crm") {
    const found = crm.get(mode.id);
    if (!found) errors.push(unknownReferenceField("contact.id", "contact", mode.id));
    return found ? fromCrm(found) : null;
  }
  if (!reference) errors.push(unknownReferenceField(mode.ref.path, "contact reference", mode.ref.value));
  return reference ? fromReference(reference) : null;
}

function itemsFrom(
  items: ItemInput[],
  modes: ItemMode[],
  catalogue: Map<number, PackagingSnapshot>,
  references: (PackagingReference | null)[],
  errors: FieldError[],
): NewItem[] {
  let nextReference = 0;
  const resolved = modes.map((mode, i): NewItem | null => {
    const base = { position: i + 1, ordered_quantity: items[i].orderedQuantity };
    if (mode.kind === "catalogue") {
      const packaging = catalogue.get(mode.packagingId);
      if (!packaging) {
        errors.push(unknownReferenceField(`items[${i}].packaging`, "packaging", mode.packagingId));
        return null;
      }
      return { ...base, packaging_id: packaging.id, packaging, packaging_reference: null };
    }
    const ref = references[nextReference++];
    if (!ref) {
      errors.push(unknownReferenceField(mode.ref.path, "packaging reference", mode.ref.value));
      return null;
    }
    if (!ref.active) {
      errors.push({
        path: mode.ref.path,
        message: `The packaging reference ${JSON.stringify(mode.ref.value)} is inactive and cannot be ordered.`,
      });
      return null;
    }
    return {
      ...base,
      packaging_id: ref.packaging.id,
      packaging: ref.packaging,
      packaging_reference: { id: ref.id, externalReference: ref.externalReference, label: ref.label },
    };
  });
  return resolved as NewItem[];
}
