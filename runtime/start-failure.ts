/**
 * Why a process could not start, in one line a person can act on: a configuration value, an
 * embedded data folder another process holds, a JetStream stream NATS would not make match the
 * settings, or a database that does not answer. Anything else is unexpected and keeps its stack.
 */
import { ConfigError } from "../shared/config/config";
import { DataFolderInUseError } from "../shared/database/data-folder-lock";
import { isDatabaseUnavailable } from "../shared/database/database-errors";
import { StreamSetupError } from "../shared/messaging/jetstream-streams";
import { describeDatabaseUrl } from "./database-setup";
import { errorText } from "./error-text";

export function startFailureText(err: unknown, databaseUrl: string | null): string | null {
  if (err instanceof ConfigError || err instanceof DataFolderInUseError || err instanceof StreamSetupError)
    return err.message;
  if (isDatabaseUnavailable(err)) {
    const where = databaseUrl ? ` at ${describeDatabaseUrl(databaseUrl)}` : "";
    return `The database${where} does not answer (${errorText(err)}): start it, or set DATABASE_URL to one that runs.`;
  }
  return null;
}
