/**
 * crm: customers and their contacts. Clients with the `crm` scope (the instance's staff) list
 * and read all of them; admins create the instance's own; the references service finds or
 * creates a partner's own ones for its contact references, owned by that partner.
 */
import type { RequestContext } from "../../shared/security/auth";
import { databaseMixin, type DbServiceSchema } from "../../shared/database/database.mixin";
import { conflictOnUnique } from "../../shared/database/database-errors";
import { ConflictError, NotFoundError, unknownReference } from "../../shared/errors";
import { announce } from "../../shared/messaging/announce";
import { BROADCASTS, type ContactsChangedPayload } from "../../shared/messaging/events";
import { toPage } from "../../shared/http/paging";
import { respondCreated } from "../../shared/http/responses";
import {
  contactsByIdsParams,
  createContactParams,
  createCustomerParams,
  idParams,
  listParams,
  upsertContactParams,
  type ContactsByIdsParams,
  type CreateContactParams,
  type CreateCustomerParams,
  type IdParams,
  type ListParams,
  type UpsertContactParams,
} from "./crm.params";
import * as repo from "./crm.repository";
import { presentContact, presentCustomer, type Contact } from "./crm.representation";
import { migrations } from "./migrations";

const crmService: DbServiceSchema<{ contactById(id: number): Promise<Contact> }> = {
  name: "crm",
  mixins: [databaseMixin("crm", migrations)],

  actions: {
    listContacts: {
      visibility: "published",
      scope: "crm",
      summary: "Contacts, each with its customer.",
      params: listParams,
      async handler(ctx: RequestContext<ListParams>) {
        const { rows, nextCursor } = await repo.listContacts(this.db, ctx.params);
        return toPage(rows.map(presentContact), nextCursor);
      },
    },

    getContact: {
      visibility: "published",
      scope: "crm",
      summary: "One contact with its customer.",
      params: idParams,
      handler(ctx: RequestContext<IdParams>) {
        return this.contactById(ctx.params.id);
      },
    },

    createContact: {
      visibility: "published",
      scope: "admin",
      summary: "Create a contact of an existing customer.",
      params: createContactParams,
      async handler(ctx: RequestContext<CreateContactParams>) {
        if (!(await repo.findCustomer(this.db, ctx.params.customerId))) {
          throw unknownReference("customerId", "customer", ctx.params.customerId);
        }
        const id = await conflictOnUnique(
          repo.insertContact(this.db, ctx.params),
          () => new ConflictError("This customer already has a contact with this e-mail address."),
        );
        respondCreated(ctx, "contacts", id);
        return this.contactById(id);
      },
    },

    listCustomers: {
      visibility: "published",
      scope: "crm",
      summary: "Customers.",
      params: listParams,
      async handler(ctx: RequestContext<ListParams>) {
        const { rows, nextCursor } = await repo.listCustomers(this.db, ctx.params);
        return toPage(rows.map(presentCustomer), nextCursor);
      },
    },

    getCustomer: {
      visibility: "published",
      scope: "crm",
      summary: "One customer.",
      params: idParams,
      async handler(ctx: RequestContext<IdParams>) {
        const row = await repo.findCustomer(this.db, ctx.params.id);
        if (!row) throw new NotFoundError("customer", ctx.params.id);
        return presentCustomer(row);
      },
    },

    createCustomer: {
      visibility: "published",
      scope: "admin",
      summary: "Create a customer.",
      params: createCustomerParams,
      async handler(ctx: RequestContext<CreateCustomerParams>) {
        const row = await conflictOnUnique(
          repo.insertCustomer(this.db, ctx.params.name),
          () => new ConflictError("A customer with this name already exists."),
        );
        respondCreated(ctx, "customers", row.id);
        return presentCustomer(row);
      },
    },

    /** Internal: the contacts with these ids (missing ones are simply absent). */
    contactsByIds: {
      visibility: "public",
      params: contactsByIdsParams,
      async handler(ctx: RequestContext<ContactsByIdsParams>): Promise<Contact[]> {
        if (ctx.params.ids.length === 0) return [];
        return (await repo.findContacts(this.db, ctx.params.ids)).map(presentContact);
      },
    },

    /**
     * Internal: finds or creates the customer (by name) and its contact (by e-mail), names
     * refreshed, among the records of one owner only (docs/api.md, "Who sees what"): a partner
     * sending another's e-mail or customer name gets records of its own, never theirs.
     */
    upsertContact: {
      visibility: "public",
      params: upsertContactParams,
      async handler(ctx: RequestContext<UpsertContactParams>): Promise<Contact> {
        const p = ctx.params;
        const id = await this.db.transaction(async (trx) => {
          const customerId = await repo.upsertCustomerByName(trx, p.ownerClientId ?? null, p.customerName);
          return repo.upsertContact(trx, { customerId, firstName: p.firstName, lastName: p.lastName, email: p.email });
        });
        // Services that keep copies of contacts (references) drop this one.
        const changed: ContactsChangedPayload = { ids: [id] };
        void announce(ctx, BROADCASTS.contactsChanged.name, changed, this.logger);
        return this.contactById(id);
      },
    },
  },

  methods: {
    async contactById(id: number): Promise<Contact> {
      const [row] = await repo.findContacts(this.db, [id]);
      if (!row) throw new NotFoundError("contact", id);
      return presentContact(row);
    },
  },
};

export default crmService;
