/**
 * One line of an import, as a single POST /orders of it would be taken (the same validation,
 * scopes and intake), with its result written in the order's own transaction: a worker that
 * dies mid-line leaves either both or neither, so a resumed import takes exactly the lines that
 * have no result yet, and no order is created twice even without an externalId. A line some
 * other worker finished meanwhile is refused by the results' primary key, its order with it.
 *
 * What the client could fix (bad JSON, invalid fields, a missing scope, a duplicate externalId)
 * becomes the line's result; what it could not (the database or another service unreachable)
 * is thrown, and the worker tries the line again later.
 */
import type { Knex } from "knex";
import { uniqueViolation } from "../../shared/database/db";
import { InvalidInputError, MalformedRequestError } from "../../shared/errors";
import { inspectJsonValue } from "../../shared/http/json-body";
import { toProblem } from "../../shared/http/problem";
import type { Principal } from "../../shared/security/auth";
import { placeOrder } from "./orders.intake";
import type { CreateOrderParams } from "./orders.params";
import type { ResolvedReferences } from "./orders.references-cache";
import type { Call } from "./orders.resolve";
import { insertResult, type LineResult } from "./orders.imports.repository";

/** The results' primary key: one result per line. */
const ONE_RESULT_PER_LINE = "order_import_results_one_per_line";

/** Checks an order body as the action's params would be checked; throws the 422 naming the fields. */
export type CheckOrder = (body: Record<string, unknown>) => void;

export interface LineIntake {
  db: Knex;
  call: Call;
  references: ResolvedReferences;
  client: Principal;
  checkOrder: CheckOrder;
}

/** Takes one line (`text`, the `line`-th of import `importId`) and records its result. */
export async function importLine(intake: LineIntake, importId: number, line: number, text: string): Promise<void> {
  try {
    const body = orderBodyOf(text);
    intake.checkOrder(body);
    await placeOrder(
      {
        ...intake,
        alongside: (trx, order) => insertResult(trx, importId, { line, status: 201, orderId: order.id, problem: null }),
      },
      body,
    );
  } catch (err) {
    if (uniqueViolation(err) === ONE_RESULT_PER_LINE) return;
    const refusal = refusalOf(err, line);
    if (!refusal) throw err;
    try {
      await insertResult(intake.db, importId, refusal);
    } catch (again) {
      if (uniqueViolation(again) !== ONE_RESULT_PER_LINE) throw again;
    }
  }
}

/** The line's JSON, held to every rule a request body is held to. */
function orderBodyOf(text: string): CreateOrderParams {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new MalformedRequestError(`The line is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw InvalidInputError.field("", "The line must be a JSON object.");
  inspectJsonValue(value).throwIfAny();
  return value as CreateOrderParams;
}

/** The result of a line the client must fix, or null when the error is ours to retry. */
function refusalOf(err: unknown, line: number): LineResult | null {
  const status = (err as { code?: unknown }).code;
  if (typeof status !== "number" || status < 400 || status >= 500) return null;
  const { body } = toProblem(err);
  return { line, status: body.status, orderId: null, problem: body };
}
