import { pageParams } from "../../shared/http/paging";
import { bodyId, idList, optional, pathId } from "../../shared/http/params";
import type { ParamsOf } from "../../shared/schema-types";

const name = { type: "string", trim: true, min: 1, max: 200 } as const;
const email = { type: "email", max: 254, normalize: true } as const;

export const listParams = { $$strict: true, ...pageParams } as const;
export type ListParams = ParamsOf<typeof listParams>;

/** A contact or customer in the path. */
export const idParams = { $$strict: true, id: pathId("record") } as const;
export type IdParams = ParamsOf<typeof idParams>;

export const createCustomerParams = { $$strict: true, name } as const;
export type CreateCustomerParams = ParamsOf<typeof createCustomerParams>;

export const createContactParams = {
  $$strict: true,
  customerId: bodyId(),
  firstName: name,
  lastName: name,
  email,
} as const;
export type CreateContactParams = ParamsOf<typeof createContactParams>;

export const contactsByIdsParams = { ids: idList(1000) } as const;
export type ContactsByIdsParams = ParamsOf<typeof contactsByIdsParams>;

/** `ownerClientId`: the partner it is done for; absent for the instance's own records (the demo). */
export const upsertContactParams = {
  $$strict: true,
  ownerClientId: optional(bodyId()),
  firstName: name,
  lastName: name,
  email,
  customerName: name,
} as const;
export type UpsertContactParams = ParamsOf<typeof upsertContactParams>;
