/**
 * What this process resolved lately for earlier orders — partner references, CRM contacts and
 * catalogue packagings named by id — so that an order naming the same ones is taken without
 * asking references, crm or catalogue again (a NATS round trip each, and their queries: a
 * client's orders name the same few contacts and packagings over and over).
 *
 * Only answers that the same lookup can never name differently are kept: a reference named by
 * its id, or by the partner's own code when that code is the reference's (codes are unique per
 * partner and never change). A value that matched only as a record id is not kept: the partner
 * may later register a reference with that code, which would then win. Unknown references,
 * contacts and packagings are never kept, so one created later is found at once.
 *
 * What can still change behind a kept answer is a contact (its names, or the contact a contact
 * reference points at): crm broadcasts `contactsChanged` when a contact changes, references
 * `contactReferencesChanged` when a reference is pointed at another contact, and the entries are
 * dropped. A broadcast is fire-and-forget, so a contact entry also expires after
 * CONTACT_TTL_MS. Packaging references and catalogue packagings never change once created (see
 * references' own caches); their entries expire only to give memory back.
 */
import { ExpiringCache } from "../../shared/expiring-cache";
import type { ReferenceLookup } from "./orders.identify";
import type { PackagingSnapshot } from "./orders.snapshots";
import type { CrmContact } from "../../shared/messaging/service-answers";

export type { CrmContact };

/** references' answer for a contact reference (references.representation.ts). */
export interface ContactReference {
  id: number;
  externalReference: string;
  contact: { id: number; firstName: string; lastName: string; email: string };
  customer: { id: number; name: string };
}

/** references' answer for a packaging reference (references.representation.ts). */
export interface PackagingReference {
  id: number;
  externalReference: string;
  active: boolean;
  label: string;
  packaging: PackagingSnapshot;
}

/** `references.resolveOrders`' answer: the contacts and the packagings, each aligned with its lookups. */
export interface ReferencesAnswer {
  contacts: (ContactReference | null)[];
  packagings: (PackagingReference | null)[];
}

type Lookup = Pick<ReferenceLookup, "by" | "value">;

/** How long a lost broadcast can leave a changed contact in use. */
export const CONTACT_TTL_MS = 10_000;
export const PACKAGING_TTL_MS = 10 * 60_000;
const MAX_ENTRIES = 10_000;

function keyOf(clientId: number, lookup: Lookup): string {
  return `${clientId}:${lookup.by}:${lookup.value}`;
}

/** Whether `found` is what `lookup` will always name: by its id, or by its own code. */
function isStable(lookup: Lookup, found: { externalReference: string }): boolean {
  return lookup.by === "internal" || found.externalReference === lookup.value;
}

export class ResolvedReferences {
  private readonly contacts = new ExpiringCache<string, ContactReference>(CONTACT_TTL_MS, MAX_ENTRIES);
  private readonly packagings = new ExpiringCache<string, PackagingReference>(PACKAGING_TTL_MS, MAX_ENTRIES);
  private readonly crmContacts = new ExpiringCache<number, CrmContact>(CONTACT_TTL_MS, MAX_ENTRIES);
  private readonly cataloguePackagings = new ExpiringCache<number, PackagingSnapshot>(PACKAGING_TTL_MS, MAX_ENTRIES);
  /**
   * Moves at every drop: an answer whose fetch was under way meanwhile may predate the change,
   * so it is used but not kept.
   */
  private generation = 0;

  /** The kept answer when every lookup has one, else `fetch`'s (whose stable parts are kept). */
  async resolve(
    clientId: number,
    contacts: Lookup[],
    packagings: Lookup[],
    fetch: () => Promise<ReferencesAnswer>,
  ): Promise<ReferencesAnswer> {
    const known = this.known(clientId, contacts, packagings);
    if (known) return known;
    const generation = this.generation;
    const answer = await fetch();
    if (generation === this.generation) this.keep(clientId, contacts, packagings, answer);
    return answer;
  }

  /** crm contacts by id: the kept ones, and the others from one `fetch` of the missing ids (kept when found). */
  async crmContactsById(
    ids: number[],
    fetch: (missing: number[]) => Promise<CrmContact[]>,
  ): Promise<Map<number, CrmContact>> {
    const found = new Map<number, CrmContact>();
    for (const id of ids) {
      const kept = this.crmContacts.get(id);
      if (kept) found.set(id, kept);
    }
    const missing = ids.filter((id) => !found.has(id));
    if (missing.length === 0) return found;
    const generation = this.generation;
    for (const contact of await fetch(missing)) {
      found.set(contact.id, contact);
      if (generation === this.generation) this.crmContacts.set(contact.id, contact);
    }
    return found;
  }

  /** Catalogue packagings by id: the kept ones, and the others from one `fetch` of the missing ids. */
  cataloguePackagingsById(
    ids: number[],
    fetch: (missing: number[]) => Promise<PackagingSnapshot[]>,
  ): Promise<PackagingSnapshot[]> {
    return this.cataloguePackagings.getMany(ids, fetch, (p) => p.id);
  }

  /** These crm contacts changed (`contactsChanged`). */
  forgetContacts(contactIds: number[]): void {
    this.generation += 1;
    const ids = new Set(contactIds);
    this.contacts.deleteWhere((reference) => ids.has(reference.contact.id));
    for (const id of ids) this.crmContacts.delete(id);
  }

  /** These contact references now point at another contact (`contactReferencesChanged`). */
  forgetContactReferences(referenceIds: number[]): void {
    this.generation += 1;
    const ids = new Set(referenceIds);
    this.contacts.deleteWhere((reference) => ids.has(reference.id));
  }

  private known(clientId: number, contacts: Lookup[], packagings: Lookup[]): ReferencesAnswer | null {
    const foundContacts = allKept(this.contacts, clientId, contacts);
    const foundPackagings = foundContacts && allKept(this.packagings, clientId, packagings);
    return foundPackagings ? { contacts: foundContacts, packagings: foundPackagings } : null;
  }

  private keep(clientId: number, contacts: Lookup[], packagings: Lookup[], answer: ReferencesAnswer): void {
    keepStable(this.contacts, clientId, contacts, answer.contacts);
    keepStable(this.packagings, clientId, packagings, answer.packagings);
  }
}

/** The kept answer of every lookup, or null when one has none. */
function allKept<V>(kept: ExpiringCache<string, V>, clientId: number, lookups: Lookup[]): V[] | null {
  const found: V[] = [];
  for (const lookup of lookups) {
    const one = kept.get(keyOf(clientId, lookup));
    if (!one) return null;
    found.push(one);
  }
  return found;
}

function keepStable<V extends { externalReference: string }>(
  kept: ExpiringCache<string, V>,
  clientId: number,
  lookups: Lookup[],
  answers: (V | null)[],
): void {
  lookups.forEach((lookup, i) => {
    const found = answers[i];
    if (found && isStable(lookup, found)) kept.set(keyOf(clientId, lookup), found);
  });
}
