/**
 * Taking an order, as a story: read how the contact and items are named, check the caller may
 * name them so, resolve everything to snapshots, then write the order, its items and its
 * `sales_order_created` event in one transaction (where a duplicate externalId is refused by
 * its unique index, with no query of its own). Nothing is written unless all
 * of it is; a repeated Idempotency-Key replays the first answer.
 */
import type { Knex } from "knex";
import { hasScope, type Principal } from "../../shared/auth";
import { uniqueViolation } from "../../shared/db";
import { ConflictError, ForbiddenError, IdempotencyKeyReusedError } from "../../shared/errors";
import { appendEvent } from "../../shared/outbox";
import { codeDay, orderCode } from "./orders.code";
import { contactModeOf, itemModesOf, scopesNeeded, type ContactMode, type ItemMode } from "./orders.identify";

type InlineMode = Extract<ContactMode, { kind: "inline" }>;
import { requestHash } from "./orders.idempotency";
import type { CreateOrderParams } from "./orders.params";
import * as repo from "./orders.repository";
import { presentOrder, type Order } from "./orders.representation";
import { registerInlineContact, resolveOrder, type Call } from "./orders.resolve";

export interface Intake {
  db: Knex;
  call: Call;
  client: Principal;
  idempotencyKey?: string;
}

/** Thrown inside the transaction when a concurrent request committed the same key first. */
class KeyTakenMeanwhile extends Error {}

export async function placeOrder(intake: Intake, order: CreateOrderParams): Promise<Order> {
  const { db, client, idempotencyKey: key } = intake;
  const hash = key ? requestHash(order) : "";
  if (key) {
    const replay = await replayed(db, client.clientId, key, hash);
    if (replay) return replay;
  }

  const contactMode = contactModeOf(order);
  const itemModes = itemModesOf(order.items);
  checkScopes(client, contactMode, itemModes);

  const resolved = await resolveOrder(intake.call, client.clientId, order.items, contactMode, itemModes);
  const items = resolved.items;
  // A partner's inline contact is only registered for an order that can be taken.
  const { contact, customer } = resolved.contact ?? (await registerInlineContact(intake.call, client.clientId, contactMode as InlineMode));

  const day = codeDay(new Date());
  const code = orderCode(day, await repo.nextCodeNumber(db, day));
  try {
    return await db.transaction(async (trx) => {
      if (key && !(await repo.claimIdempotencyKey(trx, client.clientId, key, hash))) throw new KeyTakenMeanwhile();
      const row = await repo.insertOrder(trx, {
        code, clientId: client.clientId, externalId: order.externalId ?? null, externalReference: order.externalReference ?? null,
        contact, customer, invoicingAddress: order.invoicingAddress, deliveryAddress: order.deliveryAddress,
      });
      const created = presentOrder(row, await repo.insertItems(trx, row.id, items));
      await appendEvent(trx, "orders", { event: "sales_order_created", ownerClientId: client.clientId, entity: "order", entityId: row.id, data: created });
      if (key) await repo.completeIdempotencyKey(trx, client.clientId, key, row.id, created);
      return created;
    });
  } catch (err) {
    if (err instanceof KeyTakenMeanwhile) return (await replayed(db, client.clientId, key!, hash))!;
    if (uniqueViolation(err) === "orders_client_external_id_unique") await refuseDuplicate(db, client.clientId, order.externalId!);
    throw err;
  }
}

async function replayed(db: Knex, clientId: number, key: string, hash: string): Promise<Order | null> {
  const known = await repo.findIdempotencyKey(db, clientId, key);
  if (!known || !known.response) return null;
  if (known.request_hash !== hash) throw new IdempotencyKeyReusedError();
  return known.response as Order;
}

function checkScopes(client: Principal, contact: ContactMode, items: ItemMode[]): void {
  for (const [scope, path] of scopesNeeded(contact, items)) {
    if (!hasScope(client, scope)) {
      throw new ForbiddenError(`\`${path}\` needs the \`${scope}\` scope, which this API key lacks.`, { requiredScope: scope, path });
    }
  }
}

async function refuseDuplicate(db: Knex, clientId: number, externalId: string): Promise<void> {
  const existing = await repo.findOrderByExternalId(db, clientId, externalId);
  if (existing) {
    throw new ConflictError(`You already sent an order with externalId ${JSON.stringify(externalId)}: ${existing.code}.`, {
      existingOrderId: existing.id, existingOrderCode: existing.code,
    });
  }
}
