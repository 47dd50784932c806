/**
 * Taking an order, as a story: read how the contact and items are named, check the caller may
 * name them so, resolve everything to snapshots (reads only), then write the order, its items
 * and its `sales_order_created` event in one statement (where a duplicate externalId is
 * refused by its unique index, with no query of its own). Nothing is written unless all of it
 * is; a repeated Idempotency-Key replays the first answer (orders.idempotency.ts).
 *
 * A contact sent inline is the one write outside this service (crm, references), so it comes
 * last, once everything else is known good, and with the order's externalId held
 * (orders.external-id.ts) so that a duplicate is refused before it. What is left is harmless by
 * construction: the registration is idempotent and owned by the calling partner alone
 * (docs/api.md, "Who sees what"), so a request racing another with the same Idempotency-Key
 * and body ends in the very records the winner's order names.
 */
import type { Knex } from "knex";
import { hasScope, type Principal } from "../../shared/security/auth";
import { conflictOnUnique } from "../../shared/database/database-errors";
import { ForbiddenError } from "../../shared/errors";
import type { Db } from "../../shared/database/db";
import { eventsAppended, outboxRow } from "../../shared/messaging/outbox";
import { codeDay, orderCode } from "./orders.code";
import { duplicateOrder, EXTERNAL_ID_UNIQUE, holdingExternalId } from "./orders.external-id";
import { contactModeOf, itemModesOf, scopesNeeded, type ContactMode, type ItemMode } from "./orders.identify";
import { requestHash } from "../../shared/http/idempotency";
import { placeOnce, replayOf, type KeyedRequest, type Placed } from "./orders.idempotency";
import type { CreateOrderParams } from "./orders.params";
import type { ResolvedReferences } from "./orders.references-cache";
import * as repo from "./orders.repository";
import { presentOrder, type Order } from "./orders.representation";
import { registerInlineContact, resolveOrder, type Call, type ResolvedContact } from "./orders.resolve";

export interface Intake {
  db: Knex;
  call: Call;
  references: ResolvedReferences;
  client: Principal;
  idempotencyKey?: string;
  /**
   * What must commit with the order, or not at all (an import's result for the line:
   * orders.import-line.ts). The order is then written in a transaction of its own with it.
   */
  alongside?: (trx: Knex.Transaction, order: Order) => Promise<void>;
}

export async function placeOrder(intake: Intake, order: CreateOrderParams): Promise<Placed> {
  const { db, client, idempotencyKey: key } = intake;
  const keyed = key ? { clientId: client.clientId, key, hash: requestHash(order) } : undefined;
  const replay = keyed && (await replayOf(db, keyed));
  if (replay) return replay;

  const contactMode = contactModeOf(order);
  const itemModes = itemModesOf(order.items);
  checkScopes(client, contactMode, itemModes);

  const resolved = await resolveOrder(
    intake.call,
    intake.references,
    client.clientId,
    order.items,
    contactMode,
    itemModes,
  );
  const take = (contact: ResolvedContact) => takeOrder(intake, order, keyed, contact, resolved.items);
  if (contactMode.kind !== "inline") return take(resolved.contact!);

  const registerThenTake = async () => take(await registerInlineContact(intake.call, client.clientId, contactMode));
  return order.externalId === undefined
    ? registerThenTake()
    : holdingExternalId(db, { clientId: client.clientId, externalId: order.externalId }, registerThenTake);
}

/**
 * The order's own writes: the order, its items and its event in one statement; with an
 * Idempotency-Key, in one transaction with the key's claim and answer (orders.idempotency.ts).
 */
async function takeOrder(
  intake: Intake,
  order: CreateOrderParams,
  keyed: KeyedRequest | undefined,
  resolved: ResolvedContact,
  items: repo.NewItem[],
): Promise<Placed> {
  const { db, client } = intake;
  const { contact, customer } = resolved;
  const day = codeDay(new Date());
  // The day's counter moves even for an order refused below: codes may skip a number, never repeat.
  const reservation = await repo.reserveOrder(db, day);
  const row = repo.newOrderRow(
    {
      code: orderCode(day, reservation.codeNumber),
      clientId: client.clientId,
      externalId: order.externalId ?? null,
      externalReference: order.externalReference ?? null,
      contact,
      customer,
      invoicingAddress: order.invoicingAddress,
      deliveryAddress: order.deliveryAddress,
    },
    reservation,
  );
  const created = presentOrder(
    row,
    items.map((i) => ({ ...i, order_id: row.id })),
  );
  const write = async (on: Db) => {
    await repo.insertOrder(
      on,
      row,
      items,
      outboxRow({ event: "sales_order_created", ownerClientId: client.clientId, entityId: row.id, data: created }),
    );
    eventsAppended(on, "orders");
  };
  const externalIdTaken = (constraint: string) =>
    constraint === EXTERNAL_ID_UNIQUE ? duplicateOrder(db, client.clientId, order.externalId!) : undefined;
  const { alongside } = intake;
  const writeAll = alongside
    ? () =>
        db.transaction(async (trx) => {
          await write(trx);
          await alongside(trx, created);
        })
    : () => write(db);
  const placed = keyed
    ? placeOnce(db, keyed, created, write)
    : writeAll().then((): Placed => ({ order: created, replayed: false }));
  return conflictOnUnique(placed, externalIdTaken);
}

function checkScopes(client: Principal, contact: ContactMode, items: ItemMode[]): void {
  for (const [scope, path] of scopesNeeded(contact, items)) {
    if (!hasScope(client, scope)) {
      throw new ForbiddenError(`\`${path}\` needs the \`${scope}\` scope, which this API key lacks.`, {
        requiredScope: scope,
        path,
      });
    }
  }
}
