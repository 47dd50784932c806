/**
 * An open-loop load for fault tests and the failover bench: requests are sent at a steady rate
 * whatever the answers (a slow or dead node does not slow the sender down, as real clients do
 * not wait for each other), and every outcome is recorded with when it was sent and answered.
 */

export interface LoadRequest {
  /** Names the request in summaries ("POST /orders"). */
  label: string;
  method: "GET" | "POST";
  path: string;
  key: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** The order's externalId, for orders: the losses and duplicates are counted by it. */
  externalId?: string;
}

export interface LoadOutcome {
  label: string;
  sentAt: number;
  answeredAt: number;
  /** The HTTP status; null when no answer came (refused or reset connection). */
  status: number | null;
  /** No answer: the connection's error code; a 5xx: the start of its body. */
  error?: string;
  contentType: string | null;
  retryAfter: string | null;
  externalId?: string;
}

/** A request that failed: no answer, or a 5xx. 4xx answers are the client's own mistakes. */
export function failed(o: LoadOutcome): boolean {
  return o.status === null || o.status >= 500;
}

async function send(baseUrl: string, r: LoadRequest): Promise<LoadOutcome> {
  const sentAt = Date.now();
  const base = { label: r.label, sentAt, ...(r.externalId ? { externalId: r.externalId } : {}) };
  try {
    const res = await fetch(baseUrl + r.path, {
      method: r.method,
      headers: {
        authorization: `Bearer ${r.key}`,
        ...(r.body ? { "content-type": "application/json" } : {}),
        ...r.headers,
      },
      ...(r.body ? { body: JSON.stringify(r.body) } : {}),
      // Longer than any time-out of the service: the service must answer, the test does not give up first.
      signal: AbortSignal.timeout(60_000),
    });
    const body = await res.text();
    return {
      ...base,
      answeredAt: Date.now(),
      status: res.status,
      contentType: res.headers.get("content-type"),
      retryAfter: res.headers.get("retry-after"),
      // A server error's problem document says which failure it was.
      ...(res.status >= 500 ? { error: body.slice(0, 500) } : {}),
    };
  } catch (err) {
    const e = err as { cause?: { code?: string }; name?: string; message?: string };
    return {
      ...base,
      answeredAt: Date.now(),
      status: null,
      error: e.cause?.code ?? e.name ?? e.message,
      contentType: null,
      retryAfter: null,
    };
  }
}

export class SteadyLoad {
  private readonly pending = new Set<Promise<void>>();
  private readonly outcomes: LoadOutcome[] = [];
  private timer: NodeJS.Timeout | null = null;
  private sent = 0;

  constructor(
    private readonly baseUrl: string,
    private readonly perSecond: number,
    /** The n-th request to send. */
    private readonly next: (n: number) => LoadRequest,
  ) {}

  start(): void {
    const startedAt = Date.now();
    // A 10 ms tick sends what is due since the start: the rate holds even when a tick is late.
    this.timer = setInterval(() => {
      const due = Math.floor(((Date.now() - startedAt) * this.perSecond) / 1000);
      while (this.sent < due) {
        const p = send(this.baseUrl, this.next(this.sent++)).then((o) => {
          this.outcomes.push(o);
          this.pending.delete(p);
        });
        this.pending.add(p);
      }
    }, 10);
  }

  /** Stops sending and waits for every request sent to be answered (or to fail). */
  async stop(): Promise<LoadOutcome[]> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.all([...this.pending]);
    return [...this.outcomes].sort((a, b) => a.sentAt - b.sentAt);
  }
}

export interface FailureSummary {
  requests: number;
  failures: number;
  /** From the first failed request's sending to the last one's: how long a client could be hit. */
  errorWindowMs: number;
  /** The longest any request waited for its answer. */
  slowestMs: number;
  /** Status (or error code) → count, failures only. */
  failuresByStatus: Record<string, number>;
  /** 503 answers that are not problem+json with Retry-After. */
  badUnavailableAnswers: number;
}

export function summarize(outcomes: LoadOutcome[]): FailureSummary {
  const failures = outcomes.filter(failed);
  const failuresByStatus: Record<string, number> = {};
  for (const f of failures) {
    const key = f.status === null ? String(f.error) : `${f.status} ${f.label}`;
    failuresByStatus[key] = (failuresByStatus[key] ?? 0) + 1;
  }
  const sentTimes = failures.map((f) => f.sentAt);
  return {
    requests: outcomes.length,
    failures: failures.length,
    errorWindowMs: failures.length === 0 ? 0 : Math.max(...sentTimes) - Math.min(...sentTimes),
    slowestMs: Math.max(0, ...outcomes.map((o) => o.answeredAt - o.sentAt)),
    failuresByStatus,
    badUnavailableAnswers: outcomes.filter(
      (o) =>
        o.status === 503 && !(/^application\/problem\+json/.test(o.contentType ?? "") && Number(o.retryAfter) >= 1),
    ).length,
  };
}
