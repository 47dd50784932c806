/**
 * What an order keeps of the things it names, as they were when it was taken: the contact (and
 * the partner's reference it was named by), the packaging with its product and taxes, and the
 * partner's packaging reference. Read off the order's JSON Schema in orders.openapi.ts, so the
 * rows that store them (orders.repository.ts), the representation that shows them and the
 * document cannot drift apart.
 */
import type { FromJsonSchema } from "../../shared/schema-types";
import type { Order as OrderSchema } from "./orders.openapi";

type OrderProperties = (typeof OrderSchema)["properties"];
type ItemProperties = OrderProperties["items"]["items"]["properties"];

export type ContactSnapshot = FromJsonSchema<OrderProperties["contact"]>;
/** The packaging as the catalogue described it when ordered. */
export type PackagingSnapshot = FromJsonSchema<ItemProperties["packaging"]>;
export type PackagingReferenceSnapshot = NonNullable<FromJsonSchema<ItemProperties["packagingReference"]>>;
export type Tax = PackagingSnapshot["product"]["taxes"][number];
