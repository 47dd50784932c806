/**
 * An externalId claim (services/orders/orders.external-id.ts) lasts as long as the request that
 * holds it and never outlives the process: it is a session advisory lock, so a replica killed
 * while it took an order leaves no claim behind, and the retry of that order is taken at once
 * (it waited a minute for a stale claim row before).
 */
import knexFactory, { type Knex } from "knex";
import * as repo from "../../services/orders/orders.repository";
import { partnerOrder, refusal, startCrmTenants, type CrmTenants } from "../helpers/crm-tenants";

let w: CrmTenants;
let n = 0;

beforeAll(async () => {
  w = await startCrmTenants();
});
afterAll(() => w.t.stop());

/** An order of B with its contact inline (the orders whose externalId is claimed) and a fresh externalId. */
function inlineOrder(): { externalId: string; body: Record<string, unknown> } {
  const externalId = `CLAIM-${process.pid}-${++n}`;
  return {
    externalId,
    body: partnerOrder(w, {
      externalId,
      contact: {
        externalReference: `${externalId}-C`,
        firstName: "Cleo",
        lastName: "Claim",
        email: `${externalId.toLowerCase()}@claims.test`,
      },
      customer: { name: `${externalId} customer` },
    }),
  };
}

const advisoryLocks = async (db: Knex) =>
  Number(
    (await db.raw<{ rows: { n: number }[] }>("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory'")).rows[0]
      .n,
  );

/**
 * Ends a backend and returns once it is gone. pg_terminate_backend(pid) alone only signals it:
 * the backend releases its locks a moment later, so a request sent right after could still find
 * the claim held (CI saw that 409). With a timeout, PostgreSQL waits until the backend has left
 * (its locks released on the way out); the minute is a bound for a stuck server, not a race.
 */
async function terminateBackend(db: Knex, pid: number): Promise<void> {
  const { rows } = await db.raw<{ rows: { gone: boolean }[] }>("SELECT pg_terminate_backend(?, 60000) AS gone", [pid]);
  expect(rows[0].gone).toBe(true);
}

describe("when the process holding an externalId's claim dies", () => {
  it("then the order is refused while it lives, and a retry is taken the moment its connection is gone", async () => {
    if (w.t.database.kind === "pglite") {
      // One process, one session: a holder that dies takes the whole database with it.
      console.log("[claims] a second process's session needs PostgreSQL; PGlite's claims end with its only process");
      return;
    }
    const { externalId, body } = inlineOrder();
    // Another orders replica, claiming as the service does, on its own connection.
    const replica = knexFactory({ client: "pg", connection: w.t.database.url, pool: { min: 0, max: 2 } });
    const held = await repo.holdConnection(replica);
    try {
      expect(await repo.lockExternalId(replica, held, w.partnerB.clientId, externalId)).toBe(true);

      const refused = await refusal(w.t.call("orders.create", body, w.partnerB));
      expect(refused.status).toBe(409);

      // As SIGKILL ends it: the server sees the connection drop, nobody unlocks anything.
      await terminateBackend(w.db, (held as { processID: number }).processID);
      const taken = await w.t.call<{ externalId: string }>("orders.create", body, w.partnerB);
      expect(taken.externalId).toBe(externalId);
    } finally {
      await repo.releaseConnection(replica, held!).catch(() => undefined);
      await replica.destroy();
    }
  });
});

describe("when orders with externalIds end, taken or refused", () => {
  it("then no claim is left, and every lock's connection went back to the pool", async () => {
    const orders = [inlineOrder(), inlineOrder()];
    // orders[0] is sent twice at once: which of the two wins the claim is the race's to decide.
    const [first, other, repeat] = await Promise.allSettled(
      [...orders, orders[0]].map((o) => w.t.call("orders.create", o.body, w.partnerB)),
    );
    expect(other.status).toBe("fulfilled");
    expect([first.status, repeat.status].sort()).toEqual(["fulfilled", "rejected"]);
    const lost = [first, repeat].find((o): o is PromiseRejectedResult => o.status === "rejected");
    expect((lost?.reason as { code: number } | undefined)?.code).toBe(409);
    expect(await advisoryLocks(w.db)).toBe(0);
    // The same externalIds are free again: the next claim is only refused by the order it finds.
    expect((await refusal(w.t.call("orders.create", orders[1].body, w.partnerB))).status).toBe(409);
    expect(await advisoryLocks(w.db)).toBe(0);
  });
});
