/** The events feed's cursor: a position spelled once, every other spelling refused (webhooks.feed-cursor.ts). */
import Validator from "fastest-validator";
import {
  comparePositions,
  decodeFeedCursor,
  encodeFeedCursor,
  type FeedPosition,
} from "../../services/webhooks/webhooks.feed-cursor";
import { mergeRows, startOf } from "../../services/webhooks/webhooks.feed";
import { feedParams } from "../../services/webhooks/webhooks.params";

const at = (tx: string, producer: FeedPosition["producer"], id: number): FeedPosition => ({ tx, producer, id });

describe("the events feed's cursor", () => {
  it("when a position is encoded, then it decodes to itself; any other spelling decodes to nothing", () => {
    const p = at("18446744073709551615", "references", 9_007_199_254_740_991);
    const cursor = encodeFeedCursor(p);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeFeedCursor(cursor)).toEqual(p);
    for (const forged of [
      "nope",
      `${cursor}x`,
      `${cursor}=`,
      Buffer.from("ev:1.nobody.1").toString("base64url"),
      Buffer.from("ev:01.orders.1").toString("base64url"),
      Buffer.from("ev:18446744073709551616.orders.1").toString("base64url"),
      Buffer.from("id:5").toString("base64url"),
    ])
      expect(decodeFeedCursor(forged)).toBeNull();
  });

  it("when `after` is forged, then the params are refused naming it", () => {
    const check = new Validator({ useNewCustomCheckerFunction: true }).compile(feedParams);
    expect(check({ after: encodeFeedCursor(at("5", "orders", 1)) })).toBe(true);
    expect(check({ after: "nope" })).toEqual([expect.objectContaining({ field: "after" })]);
  });

  it("when positions are compared, then the transaction id counts as a number, then the producer, then the row", () => {
    const sorted = [at("10", "orders", 1), at("9", "webhooks", 7), at("10", "orders", 0), at("9", "orders", 8)].sort(
      comparePositions,
    );
    expect(sorted).toEqual([
      at("9", "orders", 8),
      at("9", "webhooks", 7),
      at("10", "orders", 0),
      at("10", "orders", 1),
    ]);
  });

  it("when a producer's rows start after a cursor, then its own rows continue after the row, later producers at the same transaction, earlier ones at the next", () => {
    const cursor = at("42", "references", 5);
    expect(startOf(cursor, "references")).toEqual({ tx: "42", id: 5 });
    expect(startOf(cursor, "webhooks")).toEqual({ tx: "42", id: 0 });
    expect(startOf(cursor, "orders")).toEqual({ tx: "43", id: 0 });
  });

  it("when a producer answered fewer rows than it has, then the page stops at its last row", () => {
    const row = (tx: string, id: number) => ({
      tx,
      id,
      event: "sales_order_created" as const,
      ownerClientId: 1,
      createdAt: "2026-01-01T00:00:00.000Z",
      data: {},
    });
    const merged = mergeRows(
      [
        { producer: "orders", answer: { rows: [row("3", 1), row("5", 2)], more: true } },
        { producer: "references", answer: { rows: [row("4", 1), row("6", 2)], more: false } },
      ],
      10,
    );
    expect(merged.map((r) => [r.tx, r.producer])).toEqual([
      ["3", "orders"],
      ["4", "references"],
      ["5", "orders"],
    ]);
  });
});
