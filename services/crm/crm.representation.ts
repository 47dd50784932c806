/** The JSON shapes of crm entities, as GET /contacts/{id} and GET /customers/{id} return them. */
import type { FromJsonSchema } from "../../shared/schema-types";
import type * as Schemas from "./crm.openapi";
import type { ContactRow, CustomerRow } from "./crm.repository";

/** Each type is read off its JSON Schema in crm.openapi.ts, so the document and the code agree. */
export type CustomerSummary = FromJsonSchema<typeof Schemas.CustomerSummary>;
export type Customer = FromJsonSchema<typeof Schemas.Customer>;
export type Contact = FromJsonSchema<typeof Schemas.Contact, { CustomerSummary: CustomerSummary }>;

export function presentCustomer(row: CustomerRow): Customer {
  return { id: row.id, name: row.name, ownerClientId: row.owner_client_id, createdAt: row.created_at.toISOString() };
}

export function presentContact(row: ContactRow): Contact {
  return {
    id: row.id,
    firstName: row.first_name,
    lastName: row.last_name,
    email: row.email,
    customer: { id: row.customer_id, name: row.customer_name },
    ownerClientId: row.owner_client_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
