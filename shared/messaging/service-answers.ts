/**
 * What one service's internal actions answer, as the services that call them read it: declared
 * once here, since services never import each other. Only the fields callers use are typed.
 */

/** A CRM contact with its customer: `crm.contactsByIds` and `crm.upsertContact`. */
export interface CrmContact {
  id: number;
  firstName: string;
  lastName: string;
  email: string;
  customer: { id: number; name: string };
}
