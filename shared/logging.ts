/**
 * Secrets never reach a log line: these paths are censored by pino wherever they appear
 * (API keys, webhook keys and secrets, Authorization headers).
 */
export const LOG_REDACT_PATHS = [
  "key", "*.key", "*.*.key",
  "apiKey", "*.apiKey", "*.*.apiKey",
  "secret", "*.secret", "*.*.secret",
  "authorization", "*.authorization", "*.*.authorization",
  "headers.authorization", "*.headers.authorization",
  "headers['x-webhook-key']", "*.headers['x-webhook-key']",
];
