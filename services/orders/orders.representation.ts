/**
 * The order as GET /api/v1/orders/{id} returns it — also the body of the order webhooks.
 * Everything in it is a snapshot taken when the order was created.
 */
import type { FromJsonSchema } from "../../shared/schema-types";
import type { Order as OrderSchema } from "./orders.openapi";
import type { ItemRow, OrderRow } from "./orders.repository";

/**
 * The order's type, read off its JSON Schema in orders.openapi.ts: the document and the code
 * cannot drift apart. The customer is the order's snapshot of crm's CustomerSummary.
 */
export type Order = FromJsonSchema<typeof OrderSchema, { CustomerSummary: { id: number; name: string } }>;
export type OrderItem = Order["items"][number];
export type Address = Order["invoicingAddress"];

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function presentOrder(row: OrderRow, items: ItemRow[]): Order {
  return {
    id: row.id,
    code: row.code,
    status: row.status,
    version: row.version,
    externalId: row.external_id,
    externalReference: row.external_reference,
    contact: row.contact,
    customer: row.customer,
    invoicingAddress: row.invoicing_address,
    deliveryAddress: row.delivery_address,
    items: items
      .slice()
      .sort((a, b) => a.position - b.position)
      .map((i) => ({
        position: i.position,
        orderedQuantity: i.ordered_quantity,
        packaging: i.packaging,
        packagingReference: i.packaging_reference,
      })),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    validatedAt: iso(row.validated_at),
    cancelledAt: iso(row.cancelled_at),
  };
}
