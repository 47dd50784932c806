/**
 * Orders created and validated at a steady rate, as a partner and its back office would: each
 * order is created (with an Idempotency-Key and an externalId) and, once accepted, validated.
 * Open loop, like test/helpers/steady-load.ts: a slow answer does not slow the sending down.
 * What it keeps is what a subscriber may expect: the accepted orders, and the validated ones.
 */
import type { ApiWorld } from "./api-fixtures";
import { partnerOrderBody } from "./api-fixtures";

export interface OrderFlowOutcome {
  /** externalIds of the orders answered 201 (or replayed 200). */
  created: string[];
  /** externalIds of the orders whose validation answered 2xx. */
  validated: string[];
  /** Requests not answered 2xx (a 503, no answer), by "<what> <status or error>". */
  failures: Record<string, number>;
}

async function post(url: string, key: string, body?: unknown, headers: Record<string, string> = {}) {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
      body: JSON.stringify(body ?? {}),
      signal: AbortSignal.timeout(60_000),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as { id?: number } | null };
  } catch (err) {
    return { status: null, error: (err as { cause?: { code?: string } }).cause?.code ?? String(err), body: null };
  }
}

export class OrderFlow {
  private readonly pending = new Set<Promise<void>>();
  private readonly outcome: OrderFlowOutcome = { created: [], validated: [], failures: {} };
  private timer: NodeJS.Timeout | null = null;
  private sent = 0;

  constructor(
    private readonly baseUrl: string,
    private readonly world: ApiWorld,
    /** Orders per second. */
    private readonly perSecond: number,
    /** Prefix of this run's externalIds. */
    readonly run: string,
  ) {}

  start(): void {
    const startedAt = Date.now();
    this.timer = setInterval(() => {
      const due = Math.floor(((Date.now() - startedAt) * this.perSecond) / 1000);
      while (this.sent < due) {
        const p = this.oneOrder(`${this.run}-${this.sent++}`).finally(() => this.pending.delete(p));
        this.pending.add(p);
      }
    }, 10);
  }

  /** Stops creating orders and waits for those under way. */
  async stop(): Promise<OrderFlowOutcome> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.all([...this.pending]);
    return this.outcome;
  }

  private async oneOrder(externalId: string): Promise<void> {
    const created = await post(
      `${this.baseUrl}/api/v1/orders`,
      this.world.partnerKey,
      partnerOrderBody(this.world, { externalId }),
      { "Idempotency-Key": externalId },
    );
    if (!this.counted("create", created) || !created.body?.id) return;
    this.outcome.created.push(externalId);
    const validated = await post(`${this.baseUrl}/api/v1/orders/${created.body.id}/validate`, this.world.backofficeKey);
    if (this.counted("validate", validated)) this.outcome.validated.push(externalId);
  }

  /** True for a 2xx; anything else (a 503, no answer) is counted as a failure. */
  private counted(what: string, r: { status: number | null; error?: string }): boolean {
    if (r.status !== null && r.status < 300) return true;
    const key = `${what} ${r.status ?? r.error}`;
    this.outcome.failures[key] = (this.outcome.failures[key] ?? 0) + 1;
    return false;
  }
}
