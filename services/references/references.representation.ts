/**
 * The JSON shapes of partner references, as GET /contact_references/{id} and
 * GET /packaging_references/{id} return them. The contact and the packaging inside come from
 * the crm and catalogue services; only the fields read here are typed here.
 */
import type { FromJsonSchema } from "../../shared/schema-types";
import type * as Schemas from "./references.openapi";
import type { ContactReferenceRow, PackagingReferenceRow } from "./references.repository";
import type { CrmContact } from "../../shared/messaging/service-answers";

export type { CrmContact };

/** What catalogue.packagingsByIds answers: embedded as is in a packaging reference. */
export interface CataloguePackaging {
  id: number;
  name: string;
  unit: string;
  unit_factor: number;
  product: { id: number; code: string; label: string; taxes: { name: string; rate: number; vat: boolean }[] };
}

/** Read off its JSON Schema in references.openapi.ts, so the document and the code agree. */
export type ContactReference = FromJsonSchema<
  typeof Schemas.ContactReference,
  { CustomerSummary: CrmContact["customer"] }
>;

/** Interface §2.7, plus the partner's own `externalReference`. */
export type PackagingReference = FromJsonSchema<typeof Schemas.PackagingReference, { Packaging: CataloguePackaging }>;

export function presentContactReference(row: ContactReferenceRow, contact: CrmContact): ContactReference {
  return {
    id: row.id,
    externalReference: row.external_reference,
    version: row.version,
    contact: { id: contact.id, firstName: contact.firstName, lastName: contact.lastName, email: contact.email },
    customer: { id: contact.customer.id, name: contact.customer.name },
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function presentPackagingReference(
  row: PackagingReferenceRow,
  packaging: CataloguePackaging,
): PackagingReference {
  return { id: row.id, externalReference: row.external_reference, active: row.active, label: row.label, packaging };
}
