/**
 * What the orders integration tests run against: the orders service and the services it calls
 * (crm, catalogue, references) on a local broker, their fixtures, and a connection to the
 * database they share. `t.stop()` closes it all (runtime/broker.ts `stopBroker`).
 */
import type { Knex } from "knex";
import { openDatabase } from "../../shared/database/db";
import { startTestBroker, type TestBroker } from "./broker";
import { createFixtures, type Fixtures } from "./fixtures";

export interface OrdersWorld {
  t: TestBroker;
  f: Fixtures;
  db: Knex;
}

export async function startOrdersWorld(): Promise<OrdersWorld> {
  const t = await startTestBroker({ services: ["crm", "catalogue", "references", "orders"] });
  return { t, f: await createFixtures(t), db: openDatabase(t.database.url) };
}
