/**
 * The start/stop loop of a background job that polls (the outbox relay, a periodic job, the
 * webhooks dispatcher, the gateway's usage reports; through JobLoop, the webhooks recoverer and
 * the order import worker): it runs a round, pauses, and runs the next, until stopped. The pause is a WakeableSleep, so whoever knows there is work (a
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

/** What a JobLoop needs besides its job: its name in a log line, where to log, and how often to look. */
export interface JobLoopSettings {
  /** As a log line names it: "Order import", "Webhook recovery". */
  name: string;
  logger: { warn(message: string): void };
  /** The pause between looks when no job is waiting or a look failed. */
  intervalMs: number;
  /** False until the process can work (its tables exist, its calls have somewhere to go); true when absent. */
  ready?: () => boolean;
}

/** The pause of a JobLoop whose process is not ready yet. */
const NOT_READY_PAUSE_MS = 250;

/**
 * A background job kept as a row and claimed with a lease (an order import, a webhook recovery:
 * docs/architecture.md, "Background jobs"): each round claims one job, works on it, and looks
 * for the next at once; with none waiting it pauses. `work` reads `running` to stop early: the
 * job's lease then hands it to another replica, which resumes from the rows already written.
 */
export abstract class JobLoop<Job> {
  private readonly loop = new PollingLoop({ round: () => this.round() });

  constructor(private readonly settings: JobLoopSettings) {}

  /** From `start()` until `stop()`. */
  get running(): boolean {
    return this.loop.running;
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** A job was queued: look now rather than at the next round. */
  wake(): void {
    this.loop.wake();
  }

  /** The next job, claimed with a lease; none when none is waiting. */
  protected abstract claim(): Promise<Job | undefined>;

  /** Works on a claimed job until it ends, its claim is lost, or the loop stops. */
  protected abstract work(job: Job): Promise<void>;

  private async round(): Promise<number | typeof AT_ONCE> {
    if (this.settings.ready && !this.settings.ready()) return NOT_READY_PAUSE_MS;
    try {
      const job = await this.claim();
      if (job) {
        await this.work(job);
        return AT_ONCE;
      }
    } catch (err) {
      this.settings.logger.warn(`${this.settings.name}: will try again: ${(err as Error).message}`);
    }
    return this.settings.intervalMs;
  }
}
