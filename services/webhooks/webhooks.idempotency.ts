/**
 * Idempotency-Key on the webhooks actions that send (test, redeliver, recover), as on orders
 * (docs/api.md, "Idempotency"): the same key with the same request replays the first answer
 * (`Idempotent-Replayed: true`); the same key with another request is 422; the same key while the
 * first request is still acting on it is 409 (`idempotency-key-in-flight`), retry for its answer.
 * Keys are per client and kept IDEMPOTENCY_KEY_KEEP_MS; a request that failed keeps nothing, so
 * its retry runs again.
 *
 * The key is claimed in a statement of its own, committed before the action, so that every
 * replica sees it is taken; the action's writes and its stored answer then commit together, so
 * a key holds an answer if and only if the action took effect. A process that dies mid-way lets
 * the claim run out after IDEMPOTENCY_KEY_LOCK_MS.
 */
import type { Knex } from "knex";
import { IdempotencyKeyInFlightError, IdempotencyKeyReusedError } from "../../shared/errors";
import { markReplayed, requestHash } from "../../shared/http/idempotency";
import { callerOf, type RequestContext } from "../../shared/security/auth";
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  findIdempotencyKey,
  releaseIdempotencyKey,
  type StoredAnswer,
} from "./webhooks.idempotency-keys.repository";

/** How long a key and its answer are kept (Stripe keeps them as long). */
export const IDEMPOTENCY_KEY_KEEP_MS = 24 * 60 * 60 * 1000;
/** How long a claim holds without an answer: far above an action's few milliseconds. */
const IDEMPOTENCY_KEY_LOCK_MS = 30_000;

/** What an action answers: its body, status and, for a recovery, where to follow it. */
export interface ActionAnswer<T> extends StoredAnswer {
  body: T;
}

function answer<T>(ctx: RequestContext, a: { status: number; body: unknown; location?: string | null }): T {
  ctx.meta.$statusCode = a.status;
  if (a.location) ctx.meta.$location = a.location;
  return a.body as T;
}

/**
 * Runs `act` in one transaction and answers what it returns; with an Idempotency-Key, once per
 * key and request (above). `action` names the action: the same key on another action is another request.
 */
export async function idempotentAction<T>(
  db: Knex,
  ctx: RequestContext<object>,
  action: string,
  act: (trx: Knex.Transaction) => Promise<ActionAnswer<T>>,
): Promise<T> {
  const key = ctx.meta.idempotencyKey;
  if (!key) return answer<T>(ctx, await db.transaction(act));

  const clientId = callerOf(ctx).clientId;
  const hash = requestHash({ action, params: ctx.params });
  const claimed = await claimIdempotencyKey(db, {
    clientId,
    key,
    requestHash: hash,
    lockMs: IDEMPOTENCY_KEY_LOCK_MS,
    keepMs: IDEMPOTENCY_KEY_KEEP_MS,
  });
  if (!claimed) return replay<T>(db, ctx, clientId, key, hash);
  try {
    return answer<T>(
      ctx,
      await db.transaction(async (trx) => {
        const done = await act(trx);
        await completeIdempotencyKey(trx, clientId, key, done);
        return done;
      }),
    );
  } catch (err) {
    await releaseIdempotencyKey(db, clientId, key).catch(() => undefined);
    throw err;
  }
}

async function replay<T>(db: Knex, ctx: RequestContext, clientId: number, key: string, hash: string): Promise<T> {
  const known = await findIdempotencyKey(db, clientId, key);
  // Let go between the claim and this read (its action failed): as good as in flight a moment ago.
  if (!known) throw new IdempotencyKeyInFlightError();
  if (known.request_hash !== hash) throw new IdempotencyKeyReusedError();
  if (known.status_code === null) throw new IdempotencyKeyInFlightError();
  markReplayed(ctx.meta);
  return answer<T>(ctx, { status: known.status_code, body: known.response, location: known.location });
}
