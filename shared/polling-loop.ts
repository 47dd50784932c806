/**
 * The start/stop loop of a background job that polls (the outbox relay, a periodic job, the
 * webhooks dispatcher and recoverer, the gateway's usage reports): it runs a round, pauses, and
 * runs the next, until stopped. The pause is a WakeableSleep, so whoever knows there is work (a
 * commit, a finished attempt) cuts it short with `wake()`; a round that knows more is waiting
 * asks for the next one at once.
 */
import { WakeableSleep } from "./wakeable-sleep";

/** What a round resolves to when more work is waiting: the next round runs without a pause. */
export const AT_ONCE = null;

export interface PollingLoopOptions {
  /**
   * One round; resolves to the pause before the next one, in milliseconds, or AT_ONCE. It
   * handles its own failures (logs them, backs off): a rejection ends the loop.
   */
  round(): Promise<number | typeof AT_ONCE>;
  /** False: a pause alone does not keep the process running. True by default. */
  keepsProcessAlive?: boolean;
}

export class PollingLoop {
  private active = false;
  private loop: Promise<void> | null = null;
  private readonly sleep: WakeableSleep;

  constructor(private readonly opts: PollingLoopOptions) {
    this.sleep = new WakeableSleep({ keepsProcessAlive: opts.keepsProcessAlive ?? true });
  }

  /** From `start()` until `stop()`: a long round reads it to stop early. */
  get running(): boolean {
    return this.active;
  }

  /** The first round runs at once; starting a running loop changes nothing. */
  start(): void {
    if (this.active) return;
    this.active = true;
    this.loop = this.repeat();
  }

  /** No round starts after this; resolves once the round under way, if any, has ended. */
  async stop(): Promise<void> {
    this.active = false;
    this.sleep.wake();
    await this.loop;
  }

  /** Ends the pause under way now or, during a round, the next pause as soon as it begins. */
  wake(): void {
    this.sleep.wake();
  }

  private async repeat(): Promise<void> {
    while (this.active) {
      const pauseMs = await this.opts.round();
      if (this.active && pauseMs !== AT_ONCE) await this.sleep.sleep(pauseMs);
    }
  }
}
