/**
 * The broker's pino options: moleculer's start-up chatter is written at debug (so the demo banner
 * is near the top of `npm start`), everything else keeps its level, secrets stay censored, and
 * the lines are pretty only for a terminal.
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { brokerLogger, isLifecycleChatter, logTransport } from "../../shared/observability/logging";

function loggerWritingTo(level: "info" | "debug") {
  const lines: { level: number; msg: string; key?: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  const { transport, ...options } = brokerLogger(level, () => ({}), false).options.pino.options;
  expect(transport).toBeUndefined();
  return { logger: pino({ ...options, level }, sink), lines };
}

describe("when moleculer announces its start-up", () => {
  const chatter = [
    "Moleculer v0.15.2 is starting...",
    "Node ID: vm-1",
    "Service 'orders' started.",
    "'gateway' service is registered.",
    "✔ ServiceBroker with 8 service(s) started successfully in 4s.",
    "Channel prefix:",
  ];

  it("then each start-up line is chatter and an operator's message is not", () => {
    expect(chatter.filter((line) => !isLifecycleChatter(line))).toEqual([]);
    expect(
      [
        "API Gateway listening on http://0.0.0.0:3000",
        "outbox retention failed",
        "SECRETS_ENCRYPTION_KEYS is not set",
      ].filter(isLifecycleChatter),
    ).toEqual([]);
  });

  it("then at info level it is not written, and other info lines are", () => {
    const { logger, lines } = loggerWritingTo("info");
    for (const line of chatter) logger.info(line);
    logger.info("API Gateway listening on http://0.0.0.0:3000");
    expect(lines.map((l) => [l.level, l.msg])).toEqual([[30, "API Gateway listening on http://0.0.0.0:3000"]]);
  });

  it("then at debug level it is written at debug", () => {
    const { logger, lines } = loggerWritingTo("debug");
    logger.info("Service 'orders' started.");
    expect(lines.map((l) => [l.level, l.msg])).toEqual([[20, "Service 'orders' started."]]);
  });

  it("then secrets are still censored", () => {
    const { logger, lines } = loggerWritingTo("info");
    logger.info({ key: "oik_secret" }, "issued");
    expect(lines[0].key).toBe("[redacted]");
  });
});

describe("when choosing how lines look", () => {
  it("then a terminal gets pino-pretty and anything else JSON", () => {
    expect(logTransport(true)?.target).toBe("pino-pretty");
    expect(logTransport(false)).toBeUndefined();
  });
});
