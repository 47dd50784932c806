/**
 * Turns identification modes into snapshots by asking crm, catalogue and references.
 * Whatever the number of items: one catalogue call, one references call, one contact call.
 * Every unknown or unusable reference is reported at once, each with its field path.
 */
import { InvalidInputError, unknownReference, unknownReferenceField, type FieldError } from "../../shared/errors";
import type { ContactMode, ItemMode, ReferenceLookup } from "./orders.identify";
import type { ItemInput } from "./orders.params";
import type { NewItem } from "./orders.repository";
import type { ContactSnapshot, PackagingSnapshot } from "./orders.representation";

/** `ctx.call`, narrowed to what resolution needs. */
export type Call = <T>(action: string, params: object) => Promise<T>;

interface CrmContact {
  id: number;
  firstName: string;
  lastName: string;
  email: string;
  customer: { id: number; name: string };
}

interface ContactReference {
  id: number;
  externalReference: string;
  contact: { id: number; firstName: string; lastName: string; email: string };
  customer: { id: number; name: string };
}

interface PackagingReference {
  id: number;
  externalReference: string;
  active: boolean;
  label: string;
  packaging: PackagingSnapshot;
}

export interface ResolvedContact {
  contact: ContactSnapshot;
  customer: { id: number; name: string };
}

function fromReference(ref: ContactReference): ResolvedContact {
  const { id, firstName, lastName, email } = ref.contact;
  return { contact: { id, firstName, lastName, email, reference: { id: ref.id, externalReference: ref.externalReference } }, customer: ref.customer };
}

export async function resolveContact(call: Call, clientId: number, mode: ContactMode): Promise<ResolvedContact> {
  switch (mode.kind) {
    case "crm": {
      const [found] = await call<CrmContact[]>("crm.contactsByIds", { ids: [mode.id] });
      if (!found) throw unknownReference("contact.id", "contact", mode.id);
      const { id, firstName, lastName, email } = found;
      return { contact: { id, firstName, lastName, email, reference: null }, customer: found.customer };
    }
    case "reference": {
      const found = await call<ContactReference | null>("references.resolveContact", { clientId, by: mode.ref.by, value: mode.ref.value });
      if (!found) throw unknownReference(mode.ref.path, "contact reference", mode.ref.value);
      return fromReference(found);
    }
    case "inline": {
      const { reference } = await call<{ reference: ContactReference }>("references.upsertContactReference", {
        clientId, contact: mode.contact, customer: mode.customer,
      });
      return fromReference(reference);
    }
  }
}

async function packagingsById(call: Call, modes: ItemMode[]): Promise<Map<number, PackagingSnapshot>> {
  const ids = [...new Set(modes.flatMap((m) => (m.kind === "catalogue" ? [m.packagingId] : [])))];
  if (ids.length === 0) return new Map();
  const found = await call<PackagingSnapshot[]>("catalogue.packagingsByIds", { ids });
  return new Map(found.map((p) => [p.id, p]));
}

async function packagingReferences(call: Call, clientId: number, modes: ItemMode[]): Promise<(PackagingReference | null)[]> {
  const refs: ReferenceLookup[] = modes.flatMap((m) => (m.kind === "reference" ? [m.ref] : []));
  if (refs.length === 0) return [];
  return call<(PackagingReference | null)[]>("references.resolvePackagings", {
    clientId, refs: refs.map(({ by, value }) => ({ by, value })),
  });
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
  if (invalid.length === failures.length && invalid.length > 1) throw new InvalidInputError(invalid.flatMap((e) => e.data.errors as FieldError[]));
  throw failures[0];
}

export async function resolveItems(call: Call, clientId: number, items: ItemInput[], modes: ItemMode[]): Promise<NewItem[]> {
  const [catalogue, references] = await Promise.all([packagingsById(call, modes), packagingReferences(call, clientId, modes)]);
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
      errors.push({ path: mode.ref.path, message: `The packaging reference ${JSON.stringify(mode.ref.value)} is inactive and cannot be ordered.` });
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
