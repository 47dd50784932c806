/**
 * Tells the other services of a change that is already committed (a broadcast of the event
 * contract's BROADCASTS, which listeners use to drop their copies). A broadcast that fails (NATS
 * away: moleculer logs it and rejects) is logged as a warning and never thrown: the change stands,
 * the listeners' copies expire on their own, and the caller's answer must not become an error.
 * Not awaited, a rejection would also end the process (Node's default for unhandled rejections).
 */
import type { Context, LoggerInstance } from "moleculer";

export async function announce(
  ctx: Pick<Context, "broadcast">,
  broadcast: string,
  payload: unknown,
  logger: Pick<LoggerInstance, "warn">,
): Promise<void> {
  try {
    await ctx.broadcast(broadcast, payload);
  } catch (err) {
    logger.warn(`Could not announce ${broadcast}; listeners' copies expire on their own: ${(err as Error).message}`);
  }
}
