/**
 * `npm run -s cli -- <command>`: the operator's tool. The clients commands start an in-process
 * broker with only the clients service, on DATABASE_URL and without a transporter, and call
 * its actions as the system administrator; a new key is printed once.
 * Exit codes: 0 done, 1 failed (not found, database unreachable, bad environment),
 * 2 wrong usage or a value the service refused.
 */
import { parseArgs } from "node:util";
import { toProblem } from "../shared/http/problem";
import { CLIENT_KINDS, SCOPES } from "../shared/security/auth";
import { environmentWith, loadConfig, type Config } from "../shared/config/config";
import { EVENTS } from "../shared/messaging/events";
import { createBroker, stopBroker } from "./broker";
import {
  clientsTable,
  createClient,
  CREATE_FLAGS,
  describeClient,
  describeNewKey,
  listClients,
  revokeClient,
  rotateKey,
  updateClient,
  SYSTEM_ADMIN,
  type CallAction,
  type ClientView,
} from "./cli-clients";
import { variablesTable } from "./config-table";
import { describeDatabaseUrl } from "./database-setup";
import { errorText } from "./error-text";
import { startFailureText } from "./start-failure";
import { closeDatabase, openDatabase } from "../shared/database/db";
import { secretBoxFor } from "../shared/security/secrets-keyring";
import { rewriteStoredSecrets, SEALED_COLUMNS } from "../services/webhooks/webhooks.secrets-at-rest";

const USAGE = `Usage: npm run -s cli -- <command> [options]

API clients (on DATABASE_URL):
  clients create --name <name> --kind ${CLIENT_KINDS.join("|")} [--scopes a,b] [--events e1,e2]
                           create a client and print its API key, once
  clients list             list every client
  clients update <id> [--name <name>] [--scopes a,b] [--events e1,e2]
                           change a client's name, scopes or webhook events
  clients revoke <id>      revoke a client and all its keys
  clients rotate-key <id>  revoke a client's keys and print a new one, once
  Add --json to print the result as JSON.

Configuration:
  config variables         print the table of every configuration variable (Markdown)
  config check             validate this environment and print the configuration it gives

Secrets at rest (on DATABASE_URL):
  secrets reencrypt        re-encrypt every stored webhook key and secret with the first key
                           of SECRETS_ENCRYPTION_KEYS (after adding a new key in front)

Scopes:  ${SCOPES.join(", ")}
Events:  ${EVENTS.join(", ")}

With the embedded database (DATABASE_URL=pglite://...), stop \`npm start\` first: a PGlite
folder can be open in one process only. Gateways apply a change or revocation within 2 seconds.
Exit codes: 0 done, 1 failed, 2 wrong usage or refused values.`;

class UsageError extends Error {}

const OPTIONS = {
  name: { type: "string" },
  kind: { type: "string" },
  scopes: { type: "string" },
  events: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;
type OptionName = keyof typeof OPTIONS;
type Values = Partial<Record<OptionName, string | boolean>>;

interface Command {
  options: OptionName[];
  positionals: string[];
  run(values: Values, positionals: string[]): Promise<void> | void;
}

const list = (text: string | boolean | undefined) =>
  typeof text === "string"
    ? text
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;

function clientId(text: string): number {
  if (!/^[1-9]\d{0,14}$/.test(text))
    throw new UsageError(`<id> must be a client id (a positive whole number), got "${text}"`);
  return Number(text);
}

function required(values: Values, name: OptionName): string {
  const v = values[name];
  if (typeof v !== "string" || v.trim() === "") throw new UsageError(`--${name} is required`);
  return v;
}

/** Runs `work` against an in-process clients service, then stops it and closes the database. */
async function withClientsService<T>(work: (call: CallAction) => Promise<T>): Promise<T> {
  // Only what was asked: no transporter (no other node sees this one), no admin-key bootstrap.
  const cfg = loadConfig(environmentWith({ SERVICES: "clients", TRANSPORTER: "", ADMIN_API_KEY: "" }));
  const broker = createBroker(cfg, { logger: false });
  await broker.start();
  try {
    return await work((action, params) => broker.call(action, params, { meta: { client: SYSTEM_ADMIN } }));
  } finally {
    await stopBroker(broker);
  }
}

function printClient(c: ClientView, json: boolean): void {
  if (json) return console.log(JSON.stringify(c, null, 2));
  console.log(describeClient(c));
  if (c.apiKey) console.log(describeNewKey(c.apiKey));
}

/** The configuration as the processes would see it, with secrets hidden. */
function printableConfig(cfg: Config): Omit<Config, "secretsEncryptionKeys"> & { secretsEncryptionKeys: string[] } {
  return {
    ...cfg,
    databaseUrl: describeDatabaseUrl(cfg.databaseUrl),
    adminApiKey: cfg.adminApiKey ? "(set)" : null,
    secretsEncryptionKeys: cfg.secretsEncryptionKeys.map((k) => `${k.id}:(set)`),
  };
}

/** Re-encrypts every stored webhook key and secret with the current (first) key; prints how many rows changed. */
async function reencryptSecrets(): Promise<void> {
  const cfg = loadConfig(environmentWith({ TRANSPORTER: "" }));
  const box = secretBoxFor(cfg);
  const db = openDatabase(cfg.databaseUrl, 1);
  try {
    const changed = await rewriteStoredSecrets(db, (stored) => box.reseal(stored), SEALED_COLUMNS);
    console.log(`Re-encrypted ${changed} webhook subscription(s) with the key "${box.currentKeyId}".`);
  } finally {
    await closeDatabase();
  }
}

const COMMANDS: Record<string, Command> = {
  "clients create": {
    options: ["name", "kind", "scopes", "events", "json"],
    positionals: [],
    run: async (v) => {
      const opts = {
        name: required(v, "name"),
        kind: required(v, "kind"),
        scopes: list(v.scopes),
        events: list(v.events),
      };
      printClient(await withClientsService((call) => createClient(call, opts)), v.json === true);
    },
  },
  "clients list": {
    options: ["json"],
    positionals: [],
    run: async (v) => {
      const clients = await withClientsService(listClients);
      console.log(v.json ? JSON.stringify(clients, null, 2) : clientsTable(clients));
    },
  },
  "clients update": {
    options: ["name", "scopes", "events", "json"],
    positionals: ["<id>"],
    run: async (v, [id]) => {
      const opts = {
        name: typeof v.name === "string" ? v.name : undefined,
        scopes: list(v.scopes),
        events: list(v.events),
      };
      printClient(await withClientsService((call) => updateClient(call, clientId(id), opts)), v.json === true);
    },
  },
  "clients revoke": {
    options: ["json"],
    positionals: ["<id>"],
    run: async (v, [id]) =>
      printClient(await withClientsService((call) => revokeClient(call, clientId(id))), v.json === true),
  },
  "clients rotate-key": {
    options: ["json"],
    positionals: ["<id>"],
    run: async (v, [id]) =>
      printClient(await withClientsService((call) => rotateKey(call, clientId(id))), v.json === true),
  },
  "config variables": {
    options: [],
    positionals: [],
    run: () => console.log(variablesTable()),
  },
  "secrets reencrypt": {
    options: [],
    positionals: [],
    run: reencryptSecrets,
  },
  "config check": {
    options: [],
    positionals: [],
    run: () => console.log(JSON.stringify(printableConfig(loadConfig()), null, 2)),
  },
};

function parse(argv: string[]): { command: Command; values: Values; args: string[] } | null {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(errorText(err));
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0 || positionals[0] === "help") return null;
  const key = positionals.slice(0, 2).join(" ");
  const command = COMMANDS[key];
  if (!command) throw new UsageError(`unknown command "${key}"`);
  const args = positionals.slice(2);
  if (args.length !== command.positionals.length) {
    throw new UsageError(`"${key}" takes ${command.positionals.join(" ") || "no arguments"}, got ${args.length}`);
  }
  const misplaced = (Object.keys(values) as OptionName[]).filter((o) => !command.options.includes(o));
  if (misplaced.length > 0) throw new UsageError(`"${key}" does not take ${misplaced.map((o) => `--${o}`).join(", ")}`);
  return { command, values, args };
}

/** A refused call as the operator should read it, and the exit code it deserves. */
function explainFailure(err: unknown): { text: string; code: number } {
  if (err instanceof UsageError) return { text: `${err.message}\n\n${USAGE}`, code: 2 };
  const startFailure = startFailureText(err, null);
  if (startFailure) return { text: startFailure, code: 1 };
  const problem = toProblem(err);
  if (problem.status === 422) {
    const fields = (problem.body.errors ?? []).map(
      (e) => `  ${e.path.replace(/^\w+/, (f) => CREATE_FLAGS[f] ?? f)}: ${e.message}`,
    );
    return {
      text: fields.length > 0 ? ["Refused:", ...fields].join("\n") : `Refused: ${problem.body.detail}`,
      code: 2,
    };
  }
  if (problem.status < 500) return { text: problem.body.detail, code: 1 };
  return { text: `Failed: ${errorText(err)}`, code: 1 };
}

async function main(argv: string[]): Promise<number> {
  try {
    const invocation = parse(argv);
    if (!invocation) {
      console.log(USAGE);
      return 0;
    }
    await invocation.command.run(invocation.values, invocation.args);
    return 0;
  } catch (err) {
    const { text, code } = explainFailure(err);
    console.error(text);
    return code;
  }
}

void main(process.argv.slice(2)).then((code) => process.exit(code));
