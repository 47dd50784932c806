/** The JSON shapes of crm entities, as GET /contacts/{id} and GET /customers/{id} return them. */
import type { ContactRow, CustomerRow } from "./crm.repository";

export interface Customer {
  id: number;
  name: string;
  /** The partner it was created for; null when it is the instance's own. */
  ownerClientId: number | null;
  createdAt: string;
}

export interface Contact {
  id: number;
  firstName: string;
  lastName: string;
  email: string;
  customer: { id: number; name: string };
  /** Its customer's owner. */
  ownerClientId: number | null;
  createdAt: string;
  updatedAt: string;
}

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
