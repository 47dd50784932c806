/**
 * Turns identification modes into snapshots by asking references, catalogue and crm, in as few
 * calls as the modes allow: a partner naming its contact by reference gets the contact and
 * every packaging reference from one references call; catalogue ids add one catalogue call
 * beside it; a CRM contact one crm call. Whatever the number of items. Each call is saved when
 * earlier orders resolved the same records (orders.references-cache.ts). Every unknown or
 * unusable reference is reported at once, each with its field path.
 */
import { InvalidInputError, unknownReference, unknownReferenceField, type FieldError } from "../../shared/errors";
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

async function crmContact(call: Call, kept: ResolvedReferences, id: number): Promise<ResolvedContact> {
  const found = await kept.crmContact(
    id,
    async () => (await call<CrmContact[]>("crm.contactsByIds", { ids: [id] }))[0],
  );
  if (!found) throw unknownReference("contact.id", "contact", id);
  return fromCrm(found);
}

function referencedContact(found: ContactReference | null, ref: ReferenceLookup): ResolvedContact {
  if (!found) throw unknownReference(ref.path, "contact reference", ref.value);
  return fromReference(found);
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

async function packagingsById(
  call: Call,
  kept: ResolvedReferences,
  modes: ItemMode[],
): Promise<Map<number, PackagingSnapshot>> {
  const ids = [...new Set(modes.flatMap((m) => (m.kind === "catalogue" ? [m.packagingId] : [])))];
  if (ids.length === 0) return new Map();
  const found = await kept.cataloguePackagingsById(ids, (missing) =>
    call<PackagingSnapshot[]>("catalogue.packagingsByIds", { ids: missing }),
  );
  return new Map(found.map((p) => [p.id, p]));
}

function referenceLookups(modes: ItemMode[]): { by: ReferenceLookup["by"]; value: string }[] {
  return modes.flatMap((m) => (m.kind === "reference" ? [{ by: m.ref.by, value: m.ref.value }] : []));
}

async function packagingReferences(
  call: Call,
  clientId: number,
  modes: ItemMode[],
): Promise<(PackagingReference | null)[]> {
  const refs = referenceLookups(modes);
  if (refs.length === 0) return [];
  return call<(PackagingReference | null)[]>("references.resolvePackagings", { clientId, refs });
}

/**
 * Awaits every resolution and, when several fail on invalid input, reports all their fields in
 * one 422 instead of the first failure only.
 */
export async function allResolved<T extends readonly unknown[]>(work: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(work);
  const failures = settled.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
  if (failures.length === 0) return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
  const invalid = failures.filter((e): e is InvalidInputError => e instanceof InvalidInputError);
  if (invalid.length === failures.length && invalid.length > 1)
    throw new InvalidInputError(invalid.flatMap((e) => e.data.errors));
  throw failures[0];
}

export interface Resolved {
  /** Null for the inline mode: that contact is registered only once the rest is known good. */
  contact: ResolvedContact | null;
  items: NewItem[];
}

/** `kept`: what earlier orders resolved (orders.references-cache.ts). */
export async function resolveOrder(
  call: Call,
  kept: ResolvedReferences,
  clientId: number,
  items: ItemInput[],
  contact: ContactMode,
  modes: ItemMode[],
): Promise<Resolved> {
  let contactWork: Promise<ResolvedContact | null>;
  let referencesWork: Promise<(PackagingReference | null)[]>;
  if (contact.kind === "reference") {
    const lookup = { by: contact.ref.by, value: contact.ref.value };
    const refs = referenceLookups(modes);
    const both = kept.resolve(clientId, lookup, refs, () =>
      call<ReferencesAnswer>("references.resolveOrder", { clientId, contact: lookup, refs }),
    );
    contactWork = both.then((r) => referencedContact(r.contact, contact.ref));
    referencesWork = both.then((r) => r.packagings);
  } else {
    contactWork = contact.kind === "crm" ? crmContact(call, kept, contact.id) : Promise.resolve(null);
    referencesWork = packagingReferences(call, clientId, modes);
  }
  const itemsWork = Promise.all([packagingsById(call, kept, modes), referencesWork]).then(([catalogue, references]) =>
    itemsFrom(items, modes, catalogue, references),
  );
  const [resolvedItems, resolvedContact] = await allResolved<[NewItem[], ResolvedContact | null]>([
    itemsWork,
    contactWork,
  ]);
  return { contact: resolvedContact, items: resolvedItems };
}

function itemsFrom(
  items: ItemInput[],
  modes: ItemMode[],
  catalogue: Map<number, PackagingSnapshot>,
  references: (PackagingReference | null)[],
): NewItem[] {
  const errors: FieldError[] = [];
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
  if (errors.length > 0) throw new InvalidInputError(errors);
  return resolved as NewItem[];
}
