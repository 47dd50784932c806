/**
 * The pause of a polling loop that new work can cut short: the loop sleeps between rounds, and
 * whoever knows there is work (a commit, a finished attempt) wakes it at once. A wake-up that
 * arrives while the loop is busy is kept, so the next sleep returns immediately.
 */
export class WakeableSleep {
  private pending = false;
  private resolve: (() => void) | null = null;
  private timer: NodeJS.Timeout | undefined;

  /** `keepsProcessAlive: false`: a pause alone does not keep the process running (its timer is unref'd). */
  constructor(private readonly opts: { keepsProcessAlive?: boolean } = {}) {}

  sleep(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.resolve = resolve;
      this.timer = setTimeout(() => this.finish(), ms);
      if (this.opts.keepsProcessAlive === false) this.timer.unref();
    });
  }

  wake(): void {
    if (this.resolve) this.finish();
    else this.pending = true;
  }

  private finish(): void {
    clearTimeout(this.timer);
    const resolve = this.resolve;
    this.resolve = null;
    this.pending = false;
    resolve?.();
  }
}
