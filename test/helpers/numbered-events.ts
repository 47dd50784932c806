/**
 * Domain events for tests that drive the fan-out or the repository directly: numbered
 * `sales_order_validated` events, each about the order of its own number, owned by whoever
 * `owner()` names when it is made.
 */
import type { DomainEvent } from "../../shared/messaging/events";

/** Makes the next event: id `<idPrefix>-<n>`, entity id and body `{ seq: n }`. */
export function numberedValidations(idPrefix: string, owner: () => number): () => DomainEvent {
  let seq = 0;
  return () => {
    seq += 1;
    return {
      id: `${idPrefix}-${seq}`,
      event: "sales_order_validated",
      ownerClientId: owner(),
      entity: "sales_order",
      entityId: seq,
      occurredAt: new Date().toISOString(),
      data: { seq },
    };
  };
}
