import { pageParams } from "../../shared/http/paging";
import { arrayOf, bodyId, identifier, idList, optional, pathId } from "../../shared/http/params";
import type { ParamsOf } from "../../shared/schema-types";

const text = { type: "string", trim: true, min: 1, max: 200 } as const;

export const listParams = { $$strict: true, ...pageParams } as const;
export type ListParams = ParamsOf<typeof listParams>;

/** A product or packaging in the path. */
export const idParams = { $$strict: true, id: pathId("record") } as const;
export type IdParams = ParamsOf<typeof idParams>;

const taxRule = {
  type: "object",
  strict: true,
  props: {
    name: text,
    /** Percentage: 20 means 20 %. */
    rate: { type: "number", min: 0, max: 100 },
    vat: { type: "boolean" },
  },
} as const;

export const createProductParams = {
  $$strict: true,
  code: identifier(100),
  label: text,
  taxes: optional(arrayOf(taxRule, { max: 20 })),
} as const;
export type CreateProductParams = ParamsOf<typeof createProductParams>;
export type TaxInput = ParamsOf<typeof taxRule.props>;

export const createPackagingParams = {
  $$strict: true,
  productId: bodyId(),
  name: text,
  unit: { type: "string", trim: true, min: 1, max: 50 },
  unit_factor: { type: "number", positive: true, max: 1_000_000 },
} as const;
export type CreatePackagingParams = ParamsOf<typeof createPackagingParams>;

/** Orders carry at most 1,000 items, hence at most 1,000 distinct packagings per call. */
export const packagingsByIdsParams = {
  ids: idList(1000),
} as const;
export type PackagingsByIdsParams = ParamsOf<typeof packagingsByIdsParams>;
