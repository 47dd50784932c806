/**
 * The block the demo start prints once: where the API is, the two demo keys (shown only
 * here), and one ready-to-paste `curl` per client kind that creates an order (docs/interface.md §2.1).
 */
import { DEMO_ADDRESS } from "./demo-data";

export interface DemoSample {
  baseUrl: string;
  backofficeKey: string;
  partnerKey: string;
  /** A crm contact id and catalogue packaging ids, as a back office names them. */
  contactId: number;
  packagingIds: number[];
  /** The partner's own codes for the same contact and packagings. */
  contactReference: string;
  packagingReferences: string[];
}

const QUANTITIES = [2, 1];

export function backofficeOrder(s: DemoSample): object {
  return {
    externalId: "DEMO-BO-0001",
    externalReference: "PO-0001",
    contact: { id: s.contactId },
    invoicingAddress: DEMO_ADDRESS,
    deliveryAddress: DEMO_ADDRESS,
    items: s.packagingIds.map((packaging, i) => ({ packaging, orderedQuantity: QUANTITIES[i] ?? 1 })),
  };
}

export function partnerOrder(s: DemoSample): object {
  return {
    externalId: "DEMO-PARTNER-0001",
    externalReference: "SO-0001",
    contact: { externalReferenceId: s.contactReference },
    invoicingAddress: DEMO_ADDRESS,
    deliveryAddress: DEMO_ADDRESS,
    items: s.packagingReferences.map((externalReferenceId, i) => ({
      externalReferenceId,
      orderedQuantity: QUANTITIES[i] ?? 1,
    })),
  };
}

/** One line for a POSIX shell; the JSON holds no single quote, so single-quoting is safe. */
export function curlLine(baseUrl: string, apiKey: string, body: object): string {
  return `curl -sS -X POST ${baseUrl}/orders -H 'Authorization: Bearer ${apiKey}' -H 'Content-Type: application/json' -d '${JSON.stringify(body)}'`;
}

export function demoBanner(s: DemoSample): string {
  return [
    "",
    "──── Demo data ready ────────────────────────────────────────────────",
    `API:                 ${s.baseUrl}`,
    `Back office API key: ${s.backofficeKey}`,
    `Partner app API key: ${s.partnerKey}`,
    "(The keys are shown only now.)",
    "",
    "Create an order as the back office (contact.id, packaging ids):",
    curlLine(s.baseUrl, s.backofficeKey, backofficeOrder(s)),
    "",
    "Create an order as the partner app (its own references):",
    curlLine(s.baseUrl, s.partnerKey, partnerOrder(s)),
    "─────────────────────────────────────────────────────────────────────",
    "",
  ].join("\n");
}
