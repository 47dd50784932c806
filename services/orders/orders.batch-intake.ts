/**
 * Batch intake (POST /orders/batch, and any caller with many order bodies, such as a background
 * import): each body is checked against POST /orders' own schema on its own, then all are taken
 * by the one intake (orders.intake.ts) under the batch's error policy. The answer has one result
 * per body, in the bodies' order: 201 with the order, or the status and RFC 9457 problem
 * document a single POST of that body would have been answered with (shared/http/problem.ts),
 * plus its index. An Idempotency-Key covers the whole batch: the same key and bodies replay the
 * first answer.
 */
import Validator from "fastest-validator";
import { Errors } from "moleculer";
import { toProblem, type ProblemDocument } from "../../shared/http/problem";
import { keyedRequest, takeOrders, type Intake, type Outcome } from "./orders.intake";
import { replayOf, type Answered } from "./orders.idempotency";
import { createOrderParams, type CreateOrderParams, type ErrorPolicy } from "./orders.params";
import type { Order } from "./orders.representation";

/** One body's outcome: `order` when taken (201), else `problem`. */
export interface BatchResult {
  index: number;
  status: number;
  order?: Order;
  problem?: ProblemDocument & { index: number };
}

export interface BatchAnswer {
  results: BatchResult[];
}

/** The very check moleculer runs on POST /orders' params (moleculer.config.ts, `validator`). */
const checkOrder = new Validator({ useNewCustomCheckerFunction: true }).compile(createOrderParams);

/** The body, checked (and, as the action's params would be, trimmed and normalised), or the 422 it gets. */
export function checked(body: unknown): CreateOrderParams | Error {
  const result = checkOrder(body);
  if (result === true) return body as CreateOrderParams;
  return new Errors.ValidationError("Parameters validation error!", "VALIDATION_ERROR", result);
}

export function resultOf(outcome: Outcome, index: number): BatchResult {
  if ("order" in outcome) return { index, status: 201, order: outcome.order };
  const { status, body } = toProblem(outcome.error);
  return { index, status, problem: { ...body, index } };
}

const answerOf = (outcomes: Outcome[]): BatchAnswer => ({ results: outcomes.map(resultOf) });

/**
 * `bodies`: order bodies as the client sent them (each checked here). The caller's `intake`
 * carries its client, and its Idempotency-Key when it has one.
 */
export async function takeBatch(
  intake: Intake,
  bodies: unknown[],
  errorPolicy: ErrorPolicy,
): Promise<Answered<BatchAnswer>> {
  // The key covers the bodies as sent: hashed before the checks trim them.
  const request = keyedRequest(intake, { orders: bodies, errorPolicy });
  const replay = request && (await replayOf<BatchAnswer>(intake.db, request));
  if (replay) return { answer: replay, replayed: true };
  const taken = await takeOrders(intake, bodies.map(checked), errorPolicy, request && { request, answer: answerOf });
  return taken.replayed
    ? { answer: taken.replayed, replayed: true }
    : { answer: answerOf(taken.outcomes), replayed: false };
}
