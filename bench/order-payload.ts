/**
 * The order every benchmark request sends: a partner's order naming its contact and three
 * packagings by the partner's own references (the partner-reference modes), with a unique
 * `externalId` per request (autocannon replaces `[<id>]`), since a repeated one is a 409.
 */

/** What the seed made for the partner, by the partner's own codes. */
export interface PartnerReferences {
  contact: string;
  packagings: string[];
}

export const ITEMS_PER_ORDER = 3;

const ADDRESS = { recipient: "Bench Shop", street: "1 Load Street", zipCode: "75001", city: "Paris", country: "FR" };

export function orderPayload(refs: PartnerReferences, externalId: string): string {
  return JSON.stringify(orderBody(refs, externalId));
}

function orderBody(refs: PartnerReferences, externalId: string): Record<string, unknown> {
  if (refs.packagings.length < ITEMS_PER_ORDER)
    throw new Error(`the order needs ${ITEMS_PER_ORDER} packaging references`);
  return {
    externalId,
    externalReference: "PO-BENCH",
    contact: { externalReferenceId: refs.contact },
    invoicingAddress: ADDRESS,
    deliveryAddress: ADDRESS,
    items: refs.packagings
      .slice(0, ITEMS_PER_ORDER)
      .map((code, i) => ({ externalReferenceId: code, orderedQuantity: i + 1.5 })),
  };
}

/** The same order with autocannon's per-request unique id in `externalId`. */
export function orderPayloadTemplate(refs: PartnerReferences): string {
  return orderPayload(refs, "bench-[<id>]");
}

/**
 * POST /orders/batch's body: `size` of the same orders, each with its own externalId (autocannon
 * puts the request's unique id in every `[<id>]`, the row's index follows it), all or none.
 */
export function batchPayloadTemplate(refs: PartnerReferences, size: number): string {
  const orders = Array.from({ length: size }, (_, i) => orderBody(refs, `bench-[<id>]-${i}`));
  return JSON.stringify({ orders, errorPolicy: "reject_all" });
}
