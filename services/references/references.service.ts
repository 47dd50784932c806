/**
 * references: each partner's own names for contacts and packagings. A partner lists, reads and
 * registers its contact references and lists its packaging references (created by admins);
 * orders resolves the references a partner's order uses through the internal actions.
 * The contacts and packagings themselves belong to crm and catalogue and are fetched from
 * them in one call per request, whatever the number of references.
 */
import type { Context } from "moleculer";
import { callerOf, type Principal, type RequestContext, type RequestMeta } from "../../shared/security/auth";
import { databaseMixin, type DbServiceSchema } from "../../shared/database/database.mixin";
import { conflictOnUnique } from "../../shared/database/database-errors";
import { ExpiringCache } from "../../shared/expiring-cache";
import {
  ConflictError,
  InvalidInputError,
  NotFoundError,
  unknownReferenceField,
  type FieldError,
} from "../../shared/errors";
import { announce } from "../../shared/messaging/announce";
import {
  BROADCASTS,
  type ContactReferencesChangedPayload,
  type ContactsChangedPayload,
} from "../../shared/messaging/events";
import { appendEvent } from "../../shared/messaging/outbox";
import { outboxRelayMixin } from "../../shared/messaging/outbox-relay.mixin";
import { toPage } from "../../shared/http/paging";
import { respondCreated } from "../../shared/http/responses";
import { candidateKeys, indexCandidates, pick } from "./references.lookup";
import {
  createContactReferenceParams,
  createPackagingReferenceParams,
  idParams,
  listParams,
  resolveContactParams,
  resolveOrdersParams,
  resolvePackagingsParams,
  upsertContactReferenceParams,
  type ContactReferenceInput,
  type CreateContactReferenceParams,
  type CreatePackagingReferenceParams,
  type IdParams,
  type ListParams,
  type ReferenceLookup,
  type ResolveContactParams,
  type ResolveOrdersParams,
  type ResolvePackagingsParams,
  type UpsertContactReferenceParams,
} from "./references.params";
import * as repo from "./references.repository";
import {
  presentContactReference,
  presentPackagingReference,
  type CataloguePackaging,
  type ContactReference,
  type CrmContact,
  type PackagingReference,
} from "./references.representation";
import { migrations } from "./migrations";

const SCHEMA = "references";

type Ctx = Context<unknown, RequestMeta>;

export interface UpsertedContactReference {
  reference: ContactReference;
  created: boolean;
}

interface ReferencesMethods {
  contactReferencesOf(ctx: Ctx, rows: repo.ContactReferenceRow[]): Promise<ContactReference[]>;
  packagingReferencesOf(ctx: Ctx, rows: repo.PackagingReferenceRow[]): Promise<PackagingReference[]>;
  upsertContactReference(ctx: Ctx, clientId: number, input: ContactReferenceInput): Promise<UpsertedContactReference>;
  resolveContacts(ctx: Ctx, clientId: number, lookups: ReferenceLookup[]): Promise<(ContactReference | null)[]>;
  resolvePackagings(ctx: Ctx, clientId: number, refs: ReferenceLookup[]): Promise<(PackagingReference | null)[]>;
}

/**
 * What references keeps of other services' data, to save a call per order. Packagings are
 * immutable (catalogue creates, never updates), so no broadcast empties their cache: a
 * catalogue action that changed one would add a broadcast to shared/messaging/events.ts and a listener
 * here. Contacts change through crm.upsertContact, which broadcasts `contactsChanged`
 * (shared/messaging/events.ts). The time-outs are a safety net, not the mechanism.
 */
interface UpstreamCaches {
  packagings: ExpiringCache<number, CataloguePackaging>;
  contacts: ExpiringCache<number, CrmContact>;
}

/**
 * Presents each row with the entity (of another service) it points at. A row whose entity is
 * missing is a broken invariant (crm and catalogue delete nothing), hence an internal error.
 */
function withUpstream<R, U extends { id: number }, O>(
  rows: R[],
  upstream: U[],
  idOf: (row: R) => number,
  present: (row: R, entity: U) => O,
  entity: string,
): O[] {
  const byId = new Map(upstream.map((u) => [u.id, u]));
  return rows.map((row) => {
    const found = byId.get(idOf(row));
    if (!found) throw new Error(`${entity} ${idOf(row)} named by a reference does not exist`);
    return present(row, found);
  });
}

const referencesService: DbServiceSchema<ReferencesMethods, UpstreamCaches> = {
  name: "references",
  mixins: [databaseMixin(SCHEMA, migrations), outboxRelayMixin(SCHEMA)],

  actions: {
    listContactReferences: {
      visibility: "published",
      scope: "partner",
      summary: "The calling partner's contact references, each with its contact and customer.",
      params: listParams,
      async handler(ctx: RequestContext<ListParams>) {
        const { rows, nextCursor } = await repo.listContactReferences(this.db, callerOf(ctx).clientId, ctx.params);
        return toPage(await this.contactReferencesOf(ctx, rows), nextCursor);
      },
    },

    getContactReference: {
      visibility: "published",
      scope: "partner",
      summary: "One contact reference of the calling partner.",
      params: idParams,
      async handler(ctx: RequestContext<IdParams>) {
        const row = await repo.findContactReference(this.db, callerOf(ctx).clientId, ctx.params.id);
        if (!row) throw new NotFoundError("contact_reference", ctx.params.id);
        const [reference] = await this.contactReferencesOf(ctx, [row]);
        return reference;
      },
    },

    createContactReference: {
      visibility: "published",
      scope: "partner",
      summary:
        "Register a contact (and its customer) under the partner's own reference; the same reference again updates it.",
      params: createContactReferenceParams,
      async handler(ctx: RequestContext<CreateContactReferenceParams>) {
        const { reference, created } = await this.upsertContactReference(ctx, callerOf(ctx).clientId, ctx.params);
        if (created) respondCreated(ctx, "contact_references", reference.id);
        return reference;
      },
    },

    listPackagingReferences: {
      visibility: "published",
      scope: "partner",
      summary: "The calling partner's packaging references, each with its packaging, product and taxes.",
      params: listParams,
      async handler(ctx: RequestContext<ListParams>) {
        const { rows, nextCursor } = await repo.listPackagingReferences(this.db, callerOf(ctx).clientId, ctx.params);
        return toPage(await this.packagingReferencesOf(ctx, rows), nextCursor);
      },
    },

    getPackagingReference: {
      visibility: "published",
      scope: "partner",
      summary: "One packaging reference of the calling partner.",
      params: idParams,
      async handler(ctx: RequestContext<IdParams>) {
        const row = await repo.findPackagingReference(this.db, callerOf(ctx).clientId, ctx.params.id);
        if (!row) throw new NotFoundError("packaging_reference", ctx.params.id);
        const [reference] = await this.packagingReferencesOf(ctx, [row]);
        return reference;
      },
    },

    createPackagingReference: {
      visibility: "published",
      scope: "admin",
      summary: "Make a packaging orderable by a partner under the partner's own reference.",
      params: createPackagingReferenceParams,
      async handler(ctx: RequestContext<CreatePackagingReferenceParams>) {
        const p = ctx.params;
        // Both named records are checked, and both reported, before anything is written.
        const [[client], [packaging]] = await Promise.all([
          ctx.call<Principal[], { ids: number[] }>("clients.principals", { ids: [p.clientId] }),
          ctx.call<CataloguePackaging[], { ids: number[] }>("catalogue.packagingsByIds", { ids: [p.packagingId] }),
        ]);
        const errors: FieldError[] = [];
        if (!client?.scopes.includes("partner"))
          errors.push({
            path: "clientId",
            message: `No active partner client (scope \`partner\`) has id ${p.clientId}.`,
          });
        if (!packaging) errors.push(unknownReferenceField("packagingId", "packaging", p.packagingId));
        if (errors.length > 0 || !packaging) throw new InvalidInputError(errors);
        const row = await conflictOnUnique(
          repo.insertPackagingReference(this.db, {
            clientId: p.clientId,
            externalReference: p.externalReference,
            packagingId: packaging.id,
            label: p.label ?? packaging.product.label,
            active: p.active ?? true,
          }),
          () =>
            new ConflictError(
              `Client ${p.clientId} already has a packaging reference ${JSON.stringify(p.externalReference)}.`,
              {
                clientId: p.clientId,
                externalReference: p.externalReference,
              },
            ),
        );
        respondCreated(ctx, "packaging_references", row.id);
        return presentPackagingReference(row, packaging);
      },
    },

    /** Internal: the partner's contact reference a lookup names, or null (docs/api.md, `POST /api/v1/orders`). */
    resolveContact: {
      visibility: "public",
      params: resolveContactParams,
      handler(ctx: RequestContext<ResolveContactParams>): Promise<ContactReference | null> {
        const { clientId, by, value } = ctx.params;
        return this.resolveContacts(ctx, clientId, [{ by, value }]).then(([found]) => found);
      },
    },

    /**
     * Internal: the partner's packaging reference each lookup names (aligned with `refs`, null
     * when none; inactive ones included, the caller decides). One query and one catalogue call.
     */
    resolvePackagings: {
      visibility: "public",
      params: resolvePackagingsParams,
      handler(ctx: RequestContext<ResolvePackagingsParams>): Promise<(PackagingReference | null)[]> {
        return this.resolvePackagings(ctx, ctx.params.clientId, ctx.params.refs);
      },
    },

    /**
     * Internal: the contact references and packaging references of one order or of a batch of
     * them, in one call; each answer aligned with its lookups (null when none).
     */
    resolveOrders: {
      visibility: "public",
      params: resolveOrdersParams,
      async handler(ctx: RequestContext<ResolveOrdersParams>) {
        const { clientId, contacts, refs } = ctx.params;
        const [resolvedContacts, packagings] = await Promise.all([
          contacts.length > 0 ? this.resolveContacts(ctx, clientId, contacts) : Promise.resolve([]),
          refs.length > 0 ? this.resolvePackagings(ctx, clientId, refs) : Promise.resolve([]),
        ]);
        return { contacts: resolvedContacts, packagings };
      },
    },

    /** Internal: what POST /contact_references does, for a partner named explicitly. */
    upsertContactReference: {
      visibility: "public",
      params: upsertContactReferenceParams,
      handler(ctx: RequestContext<UpsertContactReferenceParams>): Promise<UpsertedContactReference> {
        const { clientId, contact, customer } = ctx.params;
        return this.upsertContactReference(ctx, clientId, { contact, customer });
      },
    },
  },

  events: {
    [BROADCASTS.contactsChanged.name](ctx: Context<ContactsChangedPayload>) {
      for (const id of ctx.params.ids) this.contacts.delete(id);
    },
  },

  created() {
    this.packagings = new ExpiringCache(10 * 60_000, 10_000);
    this.contacts = new ExpiringCache(60_000, 10_000);
  },

  methods: {
    async contactReferencesOf(ctx: Ctx, rows: repo.ContactReferenceRow[]): Promise<ContactReference[]> {
      if (rows.length === 0) return [];
      const contacts = await this.contacts.getMany(
        rows.map((r) => r.contact_id),
        (ids) => ctx.call<CrmContact[], { ids: number[] }>("crm.contactsByIds", { ids }),
        (c) => c.id,
      );
      return withUpstream(rows, contacts, (r) => r.contact_id, presentContactReference, "contact");
    },

    async packagingReferencesOf(ctx: Ctx, rows: repo.PackagingReferenceRow[]): Promise<PackagingReference[]> {
      if (rows.length === 0) return [];
      const packagings = await this.packagings.getMany(
        rows.map((r) => r.packaging_id),
        (ids) => ctx.call<CataloguePackaging[], { ids: number[] }>("catalogue.packagingsByIds", { ids }),
        (p) => p.id,
      );
      return withUpstream(rows, packagings, (r) => r.packaging_id, presentPackagingReference, "packaging");
    },

    async resolveContacts(
      ctx: Ctx,
      clientId: number,
      lookups: ReferenceLookup[],
    ): Promise<(ContactReference | null)[]> {
      const rows = await repo.findMatchingContactReferences(this.db, clientId, candidateKeys(lookups));
      const index = indexCandidates(rows);
      const picked = lookups.map((lookup) => pick(index, lookup));
      const usedRows = [...new Map(picked.flatMap((r) => (r ? [[r.id, r] as const] : []))).values()];
      const presented = new Map((await this.contactReferencesOf(ctx, usedRows)).map((c) => [c.id, c]));
      return picked.map((r) => (r ? (presented.get(r.id) ?? null) : null));
    },

    async resolvePackagings(
      ctx: Ctx,
      clientId: number,
      refs: ReferenceLookup[],
    ): Promise<(PackagingReference | null)[]> {
      const rows = await repo.findMatchingPackagingReferences(this.db, clientId, candidateKeys(refs));
      const index = indexCandidates(rows);
      const picked = refs.map((ref) => pick(index, ref));
      const usedRows = [...new Map(picked.flatMap((r) => (r ? [[r.id, r] as const] : []))).values()];
      const presented = new Map((await this.packagingReferencesOf(ctx, usedRows)).map((p) => [p.id, p]));
      return picked.map((r) => (r ? (presented.get(r.id) ?? null) : null));
    },

    /**
     * crm finds or creates the partner's own contact and customer (owned by it: another's
     * records with the same e-mail or name are never reached); then the partner's reference is
     * created, with its `contact_reference_created` event in the same transaction, or re-pointed.
     * Both steps are idempotent for one partner and body, so a retry after a failure between
     * them ends in the same records, never in a second contact.
     */
    async upsertContactReference(
      ctx: Ctx,
      clientId: number,
      input: ContactReferenceInput,
    ): Promise<UpsertedContactReference> {
      const { externalReference, firstName, lastName, email } = input.contact;
      const contact = await ctx.call<
        CrmContact,
        { ownerClientId: number; firstName: string; lastName: string; email: string; customerName: string }
      >("crm.upsertContact", {
        ownerClientId: clientId,
        firstName,
        lastName,
        email,
        customerName: input.customer.name,
      });
      // The freshest copy there is: later orders naming this contact see the new names at once.
      this.contacts.set(contact.id, contact);
      const key = { clientId, externalReference };
      const upserted = await this.db.transaction(async (trx): Promise<UpsertedContactReference> => {
        const inserted = await repo.insertContactReference(trx, key, contact.id);
        if (!inserted) {
          const updated = await repo.repointContactReference(trx, key, contact.id);
          return { reference: presentContactReference(updated, contact), created: false };
        }
        const reference = presentContactReference(inserted, contact);
        await appendEvent(trx, SCHEMA, {
          event: "contact_reference_created",
          ownerClientId: clientId,
          entityId: reference.id,
          data: reference,
        });
        return { reference, created: true };
      });
      // Services that keep what this reference resolved to (orders) drop it, once committed.
      if (!upserted.created) {
        const changed: ContactReferencesChangedPayload = { ids: [upserted.reference.id] };
        void announce(ctx, BROADCASTS.contactReferencesChanged.name, changed, this.logger);
      }
      return upserted;
    },
  },
};

export default referencesService;
