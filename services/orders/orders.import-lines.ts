/**
 * Lines of an import, taken as POST /orders/batch takes its rows with `reject_failed_rows`
 * (orders.batch-intake.ts: the same checks, scopes, intake and answers), with each line's result
 * written in the very transaction that writes the lines' orders: a worker that dies leaves both
 * or neither, so a resumed import takes exactly the lines that have no result yet, and no order
 * is created twice, with or without an externalId. Lines some other worker took meanwhile make
 * that transaction fail on the results' primary key, their orders with it.
 *
 * What the client could fix (bad JSON, invalid fields, a missing scope, a duplicate externalId)
 * becomes a line's result; what it could not (the database or another service unreachable) is
 * thrown for the whole call, and the worker tries the lines again later.
 */
import { InvalidInputError, MalformedRequestError } from "../../shared/errors";
import { inspectJsonValue } from "../../shared/http/json-body";
import { checked, resultOf } from "./orders.batch-intake";
import { takeOrders, type Intake, type Outcome } from "./orders.intake";
import type { CreateOrderParams } from "./orders.params";
import { insertResults, type LineResult } from "./orders.imports.repository";

export interface PendingLine {
  line: number;
  text: string;
}

/** Takes these lines of import `importId` (in line order) and records each one's result. */
export async function importLines(intake: Intake, importId: number, lines: PendingLine[]): Promise<void> {
  const resultsOf = (outcomes: Outcome[]): LineResult[] =>
    outcomes.map((outcome, i) => {
      const { status, order, problem } = resultOf(outcome, lines[i].line);
      return {
        line: lines[i].line,
        status,
        orderId: order?.id ?? null,
        problem: problem ? asLines(problem, lines) : null,
      };
    });
  const { outcomes } = await takeOrders(
    { ...intake, alongside: (trx, taken) => insertResults(trx, importId, resultsOf(taken)) },
    lines.map(({ text }) => bodyOf(text)),
    "reject_failed_rows",
  );
  // No order was taken (every line refused): nothing was written with them, the results go alone.
  await insertResults(intake.db, importId, resultsOf(outcomes!), { skipExisting: true });
}

/** A batch names a row by its place in the batch; an import's lines are named by their place in the import. */
function asLines(problem: Record<string, unknown>, lines: PendingLine[]): Record<string, unknown> {
  const first = problem.duplicateOfIndex;
  if (typeof first !== "number" || !lines[first]) return problem;
  const line = lines[first].line;
  return {
    ...problem,
    duplicateOfIndex: line,
    detail: `Line ${line} of this import has the same externalId ${JSON.stringify(problem.externalId)}: an externalId names one order.`,
  };
}

/** The line as an order body, held to every rule a request body is held to; or why not. */
function bodyOf(text: string): CreateOrderParams | Error {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return new MalformedRequestError(`The line is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return InvalidInputError.field("", "The line must be a JSON object.");
  try {
    inspectJsonValue(value).throwIfAny();
  } catch (err) {
    return err as InvalidInputError;
  }
  return checked(value);
}
