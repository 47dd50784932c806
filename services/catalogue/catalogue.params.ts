import { pageParams, type PageQuery } from "../../shared/paging";
import { arrayOf, bodyId, idList, optional, pathId } from "../../shared/params";

const text = { type: "string", trim: true, min: 1, max: 200 } as const;

export const listParams = { $$strict: true, ...pageParams } as const;
export type ListParams = PageQuery;

/** A product or packaging in the path. */
export const idParams = { $$strict: true, id: pathId("record") } as const;
export interface IdParams {
  id: number;
}

export interface TaxInput {
  name: string;
  /** Percentage: 20 means 20 %. */
  rate: number;
  vat: boolean;
}

const taxRule = {
  type: "object",
  strict: true,
  props: {
    name: text,
    rate: { type: "number", min: 0, max: 100 },
    vat: { type: "boolean" },
  },
} as const;

export const createProductParams = {
  $$strict: true,
  code: { type: "string", trim: true, min: 1, max: 100 },
  label: text,
  taxes: optional(arrayOf(taxRule, { max: 20 })),
} as const;
export interface CreateProductParams {
  code: string;
  label: string;
  taxes?: TaxInput[];
}

export const createPackagingParams = {
  $$strict: true,
  productId: bodyId(),
  name: text,
  unit: { type: "string", trim: true, min: 1, max: 50 },
  unit_factor: { type: "number", positive: true, max: 1_000_000 },
} as const;
export interface CreatePackagingParams {
  productId: number;
  name: string;
  unit: string;
  unit_factor: number;
}

/** Orders carry at most 1,000 items, hence at most 1,000 distinct packagings per call. */
export const packagingsByIdsParams = {
  ids: idList(1000),
} as const;
export interface PackagingsByIdsParams {
  ids: number[];
}
