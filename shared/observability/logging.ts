/**
 * Secrets never reach a log line: these paths are censored by pino wherever they appear
 * (API keys, webhook keys and secrets, Authorization headers).
 */
export const LOG_REDACT_PATHS = [
  "key",
  "*.key",
  "*.*.key",
  "apiKey",
  "*.apiKey",
  "*.*.apiKey",
  "secret",
  "*.secret",
  "*.*.secret",
  "authorization",
  "*.authorization",
  "*.*.authorization",
  "headers.authorization",
  "*.headers.authorization",
  "headers['x-webhook-key']",
  "*.headers['x-webhook-key']",
];

type Level = "fatal" | "error" | "warn" | "info" | "debug" | "trace";

/**
 * Moleculer's own start-up and shut-down chatter (versions, strategies, every service
 * registered and started). At info level it filled the first 75 lines of `npm start`, above the
 * demo banner a new user needs; it is written at debug instead, so LOG_LEVEL=debug still shows it.
 */
const LIFECYCLE_CHATTER = [
  /^Moleculer v\S+ is (starting|stopping)/,
  /^(Namespace|Node ID|Strategy|Discoverer|Serializer|Validator|Transporter|Cacher): /,
  /^Registered \d+ middleware/,
  /^Channel (consumer name|prefix|serializer):/,
  /^API Gateway server created/,
  /^'.+' service is registered\.$/,
  /^Service '.+' (started|stopped)\.$/,
  /ServiceBroker with \d+ service\(s\) started successfully/,
  /^Waiting for service\(s\) /,
  /^Service\(s\) '.+' are available\.$/,
  /^Channel adapter is connecting/,
  /^Subscribing to \d+ channels/,
];

export function isLifecycleChatter(message: unknown): boolean {
  return typeof message === "string" && LIFECYCLE_CHATTER.some((pattern) => pattern.test(message));
}

/**
 * Where log lines go: through pino-pretty (colours, local time, no pid/host noise) when a person
 * watches a terminal; one JSON object per line otherwise, as log collectors, tests and CI read them.
 */
export function logTransport(
  stdoutIsTerminal: boolean,
): { target: string; options: Record<string, unknown> } | undefined {
  if (!stdoutIsTerminal) return undefined;
  return {
    target: "pino-pretty",
    options: {
      colorize: true,
      translateTime: "SYS:HH:MM:ss.l",
      ignore: "pid,hostname,nodeID,ns,mod,svc",
      messageFormat: "{if mod}[{mod}] {end}{msg}",
    },
  };
}

/** The broker's logger option: pino, secrets censored, request ids mixed in, chatter at debug. */
export function brokerLogger(level: Level, mixin: () => object, stdoutIsTerminal = process.stdout.isTTY === true) {
  return {
    type: "Pino",
    options: {
      level,
      pino: {
        options: {
          redact: { paths: LOG_REDACT_PATHS, censor: "[redacted]" },
          mixin,
          transport: logTransport(stdoutIsTerminal),
          hooks: {
            logMethod(
              this: { debug(...args: unknown[]): void },
              args: unknown[],
              write: (...args: unknown[]) => void,
              lineLevel: number,
            ) {
              if (lineLevel === INFO && isLifecycleChatter(args[0])) return this.debug(...args);
              return write.apply(this, args);
            },
          },
        },
      },
    },
  } as const;
}

const INFO = 30;
