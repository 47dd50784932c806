import { pageParams, type PageQuery } from "../../shared/paging";
import { bodyId, idList, optional, pathId } from "../../shared/params";

const name = { type: "string", trim: true, min: 1, max: 200 } as const;
const email = { type: "email", max: 254, normalize: true } as const;

export const listParams = { $$strict: true, ...pageParams } as const;
export type ListParams = PageQuery;

/** A contact or customer in the path. */
export const idParams = { $$strict: true, id: pathId("record") } as const;
export interface IdParams {
  id: number;
}

export const createCustomerParams = { $$strict: true, name } as const;
export interface CreateCustomerParams {
  name: string;
}

export const createContactParams = {
  $$strict: true,
  customerId: bodyId(),
  firstName: name,
  lastName: name,
  email,
} as const;
export interface CreateContactParams {
  customerId: number;
  firstName: string;
  lastName: string;
  email: string;
}

export const contactsByIdsParams = { ids: idList(1000) } as const;
export interface ContactsByIdsParams {
  ids: number[];
}

/** `ownerClientId`: the partner it is done for; absent for the instance's own records (the demo). */
export const upsertContactParams = { $$strict: true, ownerClientId: optional(bodyId()), firstName: name, lastName: name, email, customerName: name } as const;
export interface UpsertContactParams {
  ownerClientId?: number;
  firstName: string;
  lastName: string;
  email: string;
  customerName: string;
}
