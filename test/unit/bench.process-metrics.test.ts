import http from "node:http";
import type { AddressInfo } from "node:net";
import { ProcessMetrics, sampleSum } from "../../bench/process-metrics";

/** What prom-client's default metrics look like on /metrics (the lines read, and their neighbours). */
const scrape = (
  cpu: number,
  major: number,
  minor: number,
) => `# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total ${cpu}
process_cpu_seconds_total_extra 99
# TYPE nodejs_eventloop_lag_p99_seconds gauge
nodejs_eventloop_lag_p99_seconds 0.0123
nodejs_heap_size_used_bytes 52428800
nodejs_gc_duration_seconds_bucket{le="0.001",kind="major"} 3
nodejs_gc_duration_seconds_sum{kind="major"} ${major}
nodejs_gc_duration_seconds_count{kind="major"} 3
nodejs_gc_duration_seconds_sum{kind="minor"} ${minor}
`;

describe("bench: what each process spent, from its /metrics", () => {
  it("when samples are read, then only the named metric counts (not a longer name), filtered by label", () => {
    const text = scrape(12.5, 0.5, 0.25);
    expect(sampleSum(text, "process_cpu_seconds_total")).toBe(12.5);
    expect(sampleSum(text, "nodejs_gc_duration_seconds_sum")).toBe(0.75);
    expect(sampleSum(text, "nodejs_gc_duration_seconds_sum", { kind: "major" })).toBe(0.5);
    expect(sampleSum(text, "no_such_metric")).toBe(0);
  });

  it("when a process is scraped at each window's end, then its counters count what the window added", async () => {
    const answers = [scrape(10, 1, 0.5), scrape(25, 1.5, 1)];
    const server = http.createServer((_, res) => res.end(answers.shift() ?? ""));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
      const metrics = new ProcessMetrics(
        new Map([
          ["orders", url],
          ["gone", "http://127.0.0.1:1/metrics"],
        ]),
      );
      await metrics.take();
      expect(await metrics.take()).toEqual({
        orders: { cpuSeconds: 15, gcSeconds: 1, majorGcSeconds: 0.5, loopDelayP99Ms: 12.3, heapUsedMB: 50 },
      });
    } finally {
      server.close();
    }
  });
});
