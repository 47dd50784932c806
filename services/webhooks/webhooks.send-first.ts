/**
 * A fresh delivery sent before it is stored (issue 23: "PostgreSQL as the log rather than the
 * queue"). When the fan-out hands a delivery straight to its dispatcher (webhooks.direct-hand-off.ts)
 * and it needs no order, no row is written before the attempt: the event, unacknowledged in its
 * JetStream channel, is what holds it until then. The delivery's row is written once, already in
 * its state after the attempt (succeeded: nothing to update), with the attempt, in the outcome
 * recorder's batch; only then does the fan-out acknowledge the event. A crash before that sends
 * it again when the channel offers the event again: at least once, never lost.
 *
 * An attempt may take up to WEBHOOK_TIMEOUT_MS, longer than the channel waits for an
 * acknowledgement, and an event held that long would hold a slot of its channel: an attempt
 * still under way after HOLD_MS is stored claimed (with a lease, as a claim would leave it),
 * the event goes, and the outcome updates the row as any claimed delivery's.
 */
import type { ClaimedDelivery, UnstoredDelivery } from "./webhooks.deliveries.repository";

/** How long an attempt may keep its event unacknowledged before its delivery is stored claimed. */
export const HOLD_MS = 1_000;

type Unstored = ClaimedDelivery & { unstored: UnstoredDelivery };

export function isUnstored(delivery: ClaimedDelivery): delivery is Unstored {
  return delivery.unstored !== undefined;
}

export class SentFirst {
  /** Resolves once the delivery's row exists (claimed, or with its outcome); rejects when it could not be written. */
  readonly stored: Promise<void>;
  private resolveStored!: () => void;
  private rejectStored!: (err: Error) => void;
  private readonly timer: NodeJS.Timeout;
  private storing: Promise<void> | null = null;
  private attemptEnded = false;

  constructor(
    private readonly delivery: Unstored,
    /** Stores it claimed; false when nothing was stored (stored already, or its subscription is gone). */
    storeClaimed: (delivery: Unstored) => Promise<boolean>,
    holdMs = HOLD_MS,
  ) {
    this.stored = new Promise<void>((resolve, reject) => {
      this.resolveStored = resolve;
      this.rejectStored = reject;
    });
    // The fan-out awaits it; a rejection nobody awaited yet must not end the process.
    this.stored.catch(() => undefined);
    this.timer = setTimeout(() => {
      if (this.attemptEnded) return;
      this.storing = storeClaimed(delivery).then(
        () => {
          // Stored (or stored by another, or its subscription gone: nothing left to store);
          // either way its outcome now updates a claim and the event may go.
          delete (this.delivery as ClaimedDelivery).unstored;
          this.resolveStored();
        },
        // Still unstored: its outcome stores it, and the fan-out waits for that.
        () => undefined,
      );
    }, holdMs);
    this.timer.unref();
  }

  /**
   * The attempt ended: no storing starts now, and one under way has ended when this resolves.
   * After it, the delivery is `unstored` exactly when its outcome must write its row.
   */
  async ended(): Promise<void> {
    this.attemptEnded = true;
    clearTimeout(this.timer);
    await this.storing;
  }

  /** Its outcome was written (`true`) or not: the event may go, or is offered again. */
  outcomeWritten(written: boolean): void {
    if (written) this.resolveStored();
    else this.rejectStored(new Error(`webhook delivery ${this.delivery.id} sent, but not recorded`));
  }
}
