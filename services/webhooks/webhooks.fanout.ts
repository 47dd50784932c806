/**
 * Fan-out: one event from a channel becomes one pending delivery per subscription whose
 * client, by its grants at this moment (webhooks.grants.ts), hears it (webhooks.events.ts):
 * one read, then the event and its deliveries in one statement (an INSERT … SELECT that keeps
 * only the subscriptions still there). A re-published event adds nothing (unique per event and
 * subscription), so the channel may deliver a message more than once.
 */
import Validator from "fastest-validator";
import type { Knex } from "knex";
import { EVENTS, type DomainEvent } from "../../shared/events";
import { hears } from "./webhooks.events";
import type { ClientGrants } from "./webhooks.grants";
import * as repo from "./webhooks.repository";

const checkEvent = new Validator().compile({
  id: { type: "string", min: 1, max: 200 },
  event: { type: "enum", values: [...EVENTS] },
  ownerClientId: { type: "number", integer: true },
  entity: { type: "string", min: 1 },
  entityId: { type: "number", integer: true },
  occurredAt: { type: "string", pattern: /^\d{4}-\d\d-\d\dT/ },
  data: { type: "any" },
});

/** The message as a DomainEvent, or null when it is not one (it could never be processed). */
export function asDomainEvent(payload: unknown): DomainEvent | null {
  if (typeof payload !== "object" || payload === null) return null;
  return checkEvent(payload) === true ? (payload as DomainEvent) : null;
}

/** The subscriptions (among these) whose client, by its current grants, hears this event. */
async function entitled(grants: ClientGrants, event: DomainEvent, candidates: { id: number; client_id: number }[]): Promise<number[]> {
  if (candidates.length === 0) return [];
  const principals = await grants.cached(candidates.map((c) => c.client_id));
  return candidates.filter((c) => hears(principals.get(c.client_id), c.client_id, event)).map((c) => c.id);
}

/** Creates the deliveries of one event; resolves to how many were new. */
export async function fanOut(db: Knex, grants: ClientGrants, event: DomainEvent): Promise<number> {
  // Most events concern no subscriber: the read settles them with no write at all.
  const hearing = await entitled(grants, event, await repo.candidateSubscriptions(db, event));
  // Stored once, as the exact text every subscriber receives; a subscription deleted or
  // disabled since the read gets nothing.
  return repo.insertEventDeliveries(db, event, JSON.stringify(event.data), hearing);
}
