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

/** `references.resolveOrder`'s answer: the contact, and each packaging aligned with the lookups. */
export interface ReferencesAnswer {
  contact: ContactReference | null;
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
    contact: Lookup,
    packagings: Lookup[],
    fetch: () => Promise<ReferencesAnswer>,
  ): Promise<ReferencesAnswer> {
    const known = this.known(clientId, contact, packagings);
    if (known) return known;
    const generation = this.generation;
    const answer = await fetch();
    if (generation === this.generation) this.keep(clientId, contact, packagings, answer);
    return answer;
  }

  /** A crm contact by id: the kept one, else `fetch`'s (kept when found). */
  async crmContact(id: number, fetch: () => Promise<CrmContact | undefined>): Promise<CrmContact | undefined> {
    const kept = this.crmContacts.get(id);
    if (kept) return kept;
    const generation = this.generation;
    const found = await fetch();
    if (found && generation === this.generation) this.crmContacts.set(id, found);
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

  private known(clientId: number, contact: Lookup, lookups: Lookup[]): ReferencesAnswer | null {
    const foundContact = this.contacts.get(keyOf(clientId, contact));
    if (!foundContact) return null;
    const packagings: PackagingReference[] = [];
    for (const lookup of lookups) {
      const found = this.packagings.get(keyOf(clientId, lookup));
      if (!found) return null;
      packagings.push(found);
    }
    return { contact: foundContact, packagings };
  }

  private keep(clientId: number, contact: Lookup, lookups: Lookup[], answer: ReferencesAnswer): void {
    if (answer.contact && isStable(contact, answer.contact))
      this.contacts.set(keyOf(clientId, contact), answer.contact);
    lookups.forEach((lookup, i) => {
      const found = answer.packagings[i];
      if (found && isStable(lookup, found)) this.packagings.set(keyOf(clientId, lookup), found);
    });
  }
}
