import { pageParams } from "../../shared/http/paging";
import { arrayOf, bodyId, identifier, optional, pathId } from "../../shared/http/params";
import type { ParamsOf } from "../../shared/schema-types";

const name = { type: "string", trim: true, min: 1, max: 200 } as const;
const email = { type: "email", max: 254, normalize: true } as const;
const id = bodyId();
/** The partner's own code of a reference: compared as sent, never trimmed (shared/http/params.ts). */
const externalReference = identifier(200);
/** How a partner names one of its references (docs/api.md, `POST /api/v1/orders`: partner reference mode). */
const lookupBy = { type: "enum", values: ["internal", "external"] } as const;
/** A code or an id's digits, as orders validated it; numbers are accepted and become strings. */
const lookupValue = { ...identifier(200), convert: true } as const;

export const listParams = { $$strict: true, ...pageParams } as const;
export type ListParams = ParamsOf<typeof listParams>;

/** A contact or packaging reference in the path. */
export const idParams = { $$strict: true, id: pathId("record") } as const;
export type IdParams = ParamsOf<typeof idParams>;

/** Body of POST /contact_references (docs/interface.md §2.6): the same rules crm applies to a contact. */
const contactReferenceBody = {
  contact: {
    type: "object",
    strict: true,
    props: { externalReference, firstName: name, lastName: name, email },
  },
  customer: { type: "object", strict: true, props: { name } },
} as const;

export type ContactReferenceInput = ParamsOf<typeof contactReferenceBody>;

export const createContactReferenceParams = { $$strict: true, ...contactReferenceBody } as const;
export type CreateContactReferenceParams = ParamsOf<typeof createContactReferenceParams>;

export const upsertContactReferenceParams = { $$strict: true, clientId: id, ...contactReferenceBody } as const;
export type UpsertContactReferenceParams = ParamsOf<typeof upsertContactReferenceParams>;

export const createPackagingReferenceParams = {
  $$strict: true,
  clientId: id,
  externalReference,
  packagingId: id,
  label: optional(name),
  active: optional({ type: "boolean" }),
} as const;
export type CreatePackagingReferenceParams = ParamsOf<typeof createPackagingReferenceParams>;

const lookup = { by: lookupBy, value: lookupValue } as const;
export type ReferenceLookup = ParamsOf<typeof lookup>;
export type LookupBy = ReferenceLookup["by"];

export const resolveContactParams = { clientId: id, ...lookup } as const;
export type ResolveContactParams = ParamsOf<typeof resolveContactParams>;

/**
 * An order carries at most 1,000 items; a batch's are sent 1,000 at a time (orders.resolve.ts).
 * A new rule for each field: fastest-validator compiles one rule object once (shared/http/params.ts).
 */
const lookups = () => arrayOf({ type: "object", props: lookup }, { max: 1000 });

export const resolvePackagingsParams = { clientId: id, refs: lookups() } as const;
export type ResolvePackagingsParams = ParamsOf<typeof resolvePackagingsParams>;

/** A partner's orders (one, or a batch) in one call: their contact references and packaging references. */
export const resolveOrdersParams = { clientId: id, contacts: lookups(), refs: lookups() } as const;
export type ResolveOrdersParams = ParamsOf<typeof resolveOrdersParams>;
