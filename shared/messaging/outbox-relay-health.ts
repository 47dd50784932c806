/**
 * How an outbox relay's rounds are going (shared/messaging/outbox-relay.mixin.ts), for three
 * readers: its back-off (how many rounds in a row had a publish fail), the probes (how long it
 * has published nothing: /readyz and `outbox_publishing_failing_seconds`), and its log, which
 * stays quiet while NATS is away: the first failure is written at once, then what followed is
 * summed up (how many, the first and the last error) at most once per interval. Before, each
 * failed round wrote a line, and each commit woke the relay for another round: 74,350 lines in
 * 20 s.
 */

/** The least time between two lines about failures of one relay. */
export const FAILURE_SUMMARY_INTERVAL_MS = 10_000;

/** What a round that published nothing but failures, or broke, hands over. */
export interface RoundFailure {
  error: unknown;
  /** Events whose publish failed (0 when the round broke before publishing). */
  failedPublishes: number;
}

interface HeldBack {
  count: number;
  since: number;
  first: string;
  last: string;
}

const messageOf = (err: unknown) => (err as Error | null)?.message ?? String(err);

export class RelayHealth {
  private failedRounds = 0;
  private failingSince: number | null = null;
  private lastLineAt = Number.NEGATIVE_INFINITY;
  private heldBack: HeldBack | null = null;

  constructor(
    private readonly write: (line: string) => void,
    private readonly intervalMs = FAILURE_SUMMARY_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Rounds in a row in which a publish failed, or that broke: the back-off grows with them. One
   * stream without a leader fails its events in every round while the others' go out: retrying
   * them at the pace of commits only multiplied the failures.
   */
  get consecutiveFailedRounds(): number {
    return this.failedRounds;
  }

  /** Milliseconds since the first of the rounds in a row that published nothing; 0 while events flow. */
  failingForMs(): number {
    return this.failingSince === null ? 0 : this.now() - this.failingSince;
  }

  /** A round broke (the database) or none of its publishes was acknowledged. */
  roundFailed(failure: RoundFailure): void {
    this.failedRounds += 1;
    this.failingSince ??= this.now();
    this.note(failure);
  }

  /**
   * A round published something or had nothing to publish: events flow. `partly` names the
   * publishes of the round that failed nonetheless; they go again in a later round.
   */
  roundSucceeded(partly?: RoundFailure): void {
    this.failingSince = null;
    if (partly) {
      this.failedRounds += 1;
      this.note(partly);
      return;
    }
    this.failedRounds = 0;
    this.writeHeldBack();
  }

  private note({ error, failedPublishes }: RoundFailure): void {
    const message = messageOf(error);
    if (this.heldBack === null && this.now() - this.lastLineAt >= this.intervalMs) {
      const what = failedPublishes > 0 ? `publishing ${failedPublishes} event(s) failed` : "a round failed";
      this.writeLine(`${what}, will retry: ${message}`);
      return;
    }
    const held = this.heldBack ?? { count: 0, since: this.now(), first: message, last: message };
    this.heldBack = { ...held, count: held.count + Math.max(1, failedPublishes), last: message };
    this.writeHeldBack();
  }

  /** The failures held back, once the interval since the last line has passed. */
  private writeHeldBack(): void {
    const held = this.heldBack;
    if (held === null || this.now() - this.lastLineAt < this.intervalMs) return;
    this.heldBack = null;
    const state =
      this.failingSince === null ? "events flow again" : `failing for ${Math.round(this.failingForMs() / 1000)} s`;
    const seconds = Math.round((this.now() - held.since) / 1000);
    const errors = held.first === held.last ? held.first : `first: ${held.first}; last: ${held.last}`;
    this.writeLine(`${held.count} more failure(s) in ${seconds} s (${errors}); ${state}`);
  }

  private writeLine(line: string): void {
    this.lastLineAt = this.now();
    this.write(line);
  }
}

/**
 * What /readyz says of a relay's events: `publishing` fails once its publishing has failed for
 * `stalledAfterMs` (OUTBOX_STALLED_AFTER), `outbox` once its oldest unpublished event is that old
 * ("unknown" when the database did not say).
 */
export function eventFlowChecks(
  failingForMs: number,
  oldestUnpublishedSeconds: number | null,
  stalledAfterMs: number,
): { publishing: string; outbox: string } {
  const publishing = failingForMs >= stalledAfterMs ? `failing for ${Math.round(failingForMs / 1000)} s` : "ok";
  if (oldestUnpublishedSeconds === null) return { publishing, outbox: "unknown" };
  const stalled = oldestUnpublishedSeconds * 1000 >= stalledAfterMs;
  return {
    publishing,
    outbox: stalled ? `oldest unpublished event ${Math.round(oldestUnpublishedSeconds)} s old` : "ok",
  };
}
