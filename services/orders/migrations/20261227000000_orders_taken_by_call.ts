import type { Knex } from "knex";

const SCHEMA = "orders";

/**
 * The call that took each order (the id of the request's context that the broker keeps when it
 * sends a call again, orders.intake.ts): a repeat of a slow `POST /orders` finds the order its own
 * first attempt wrote and answers it, instead of a 409 naming it. Null for the orders taken
 * before, by a batch or an import, or by a call made outside a request.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE ??.orders ADD COLUMN taken_by_call text`, [SCHEMA]);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE ??.orders DROP COLUMN taken_by_call`, [SCHEMA]);
}
