/**
 * The order as GET /api/v1/orders/{id} returns it — also the body of the order webhooks.
 * Everything in it is a snapshot taken when the order was created.
 */
import type { AddressInput, OrderStatus } from "./orders.params";
import type { ItemRow, OrderRow } from "./orders.repository";

export interface Tax {
  name: string;
  rate: number;
  vat: boolean;
}

/** The packaging as the catalogue described it when ordered. */
export interface PackagingSnapshot {
  id: number;
  name: string;
  unit: string;
  unit_factor: number;
  product: { id: number; code: string; label: string; taxes: Tax[] };
}

export interface PackagingReferenceSnapshot {
  id: number;
  externalReference: string;
  label: string;
}

export interface ContactSnapshot {
  id: number;
  firstName: string;
  lastName: string;
  email: string;
  /** The partner's contact reference used to name the contact, if any. */
  reference: { id: number; externalReference: string } | null;
}

export interface OrderItem {
  position: number;
  orderedQuantity: number;
  packaging: PackagingSnapshot;
  packagingReference: PackagingReferenceSnapshot | null;
}

export interface Order {
  id: number;
  code: string;
  status: OrderStatus;
  externalId: string | null;
  externalReference: string | null;
  contact: ContactSnapshot;
  customer: { id: number; name: string };
  invoicingAddress: AddressInput;
  deliveryAddress: AddressInput;
  items: OrderItem[];
  createdAt: string;
  updatedAt: string;
  validatedAt: string | null;
  cancelledAt: string | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function presentOrder(row: OrderRow, items: ItemRow[]): Order {
  return {
    id: row.id,
    code: row.code,
    status: row.status,
    externalId: row.external_id,
    externalReference: row.external_reference,
    contact: row.contact,
    customer: row.customer,
    invoicingAddress: row.invoicing_address,
    deliveryAddress: row.delivery_address,
    items: items
      .slice()
      .sort((a, b) => a.position - b.position)
      .map((i) => ({ position: i.position, orderedQuantity: i.ordered_quantity, packaging: i.packaging, packagingReference: i.packaging_reference })),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    validatedAt: iso(row.validated_at),
    cancelledAt: iso(row.cancelled_at),
  };
}
