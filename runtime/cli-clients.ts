/**
 * The `clients` commands of the CLI. Each one is a call to an action of the clients service,
 * made as the system administrator (the CLI runs where the database is: it is trusted).
 */
import { SCOPES, type Principal } from "../shared/security/auth";
import type { Page } from "../shared/http/paging";
import { MAX_LIMIT } from "../shared/http/paging";

/** What the clients service returns for one client (plus `apiKey` when a key was just made). */
export interface ClientView {
  id: number;
  name: string;
  kind: string;
  scopes: string[];
  webhookEvents: string[];
  createdAt: string;
  revokedAt: string | null;
  apiKey?: string;
}

export type CallAction = <T>(action: string, params: object) => Promise<T>;

export const SYSTEM_ADMIN: Principal = {
  clientId: 0,
  name: "cli (system)",
  kind: "admin",
  scopes: [...SCOPES],
  webhookEvents: [],
};

/** A command-line flag for each field of `clients.create`, to name the flag in error messages. */
export const CREATE_FLAGS: Record<string, string> = {
  name: "--name",
  kind: "--kind",
  scopes: "--scopes",
  webhookEvents: "--events",
};

export interface CreateOptions {
  name: string;
  kind: string;
  scopes?: string[];
  events?: string[];
}

export function createClient(call: CallAction, opts: CreateOptions): Promise<ClientView> {
  return call<ClientView>("clients.create", {
    name: opts.name,
    kind: opts.kind,
    ...(opts.scopes ? { scopes: opts.scopes } : {}),
    ...(opts.events ? { webhookEvents: opts.events } : {}),
  });
}

/** Every client, following the pages to the end. */
export async function listClients(call: CallAction): Promise<ClientView[]> {
  const all: ClientView[] = [];
  let cursor: string | null = null;
  do {
    const page: Page<ClientView> = await call<Page<ClientView>>("clients.list", {
      limit: MAX_LIMIT,
      ...(cursor ? { cursor } : {}),
    });
    all.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return all;
}

export interface UpdateOptions {
  name?: string;
  scopes?: string[];
  events?: string[];
}

/** Only the fields given change; the clients service refuses an update that gives none. */
export function updateClient(call: CallAction, id: number, opts: UpdateOptions): Promise<ClientView> {
  return call<ClientView>("clients.update", {
    id,
    ...(opts.name !== undefined ? { name: opts.name } : {}),
    ...(opts.scopes ? { scopes: opts.scopes } : {}),
    ...(opts.events ? { webhookEvents: opts.events } : {}),
  });
}

export function revokeClient(call: CallAction, id: number): Promise<ClientView> {
  return call<ClientView>("clients.revoke", { id });
}

export function rotateKey(call: CallAction, id: number): Promise<ClientView> {
  return call<ClientView>("clients.rotateKey", { id });
}

/** `id  name  kind  scopes  status`, aligned, for people. */
export function clientsTable(clients: ClientView[]): string {
  const rows = [
    ["ID", "NAME", "KIND", "SCOPES", "STATUS"],
    ...clients.map((c) => [
      String(c.id),
      c.name,
      c.kind,
      c.scopes.join(","),
      c.revokedAt ? `revoked ${c.revokedAt}` : "active",
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

export function describeClient(c: ClientView): string {
  return [
    `Client ${c.id}: ${c.name} (${c.kind})${c.revokedAt ? `, revoked ${c.revokedAt}` : ""}`,
    `  scopes:         ${c.scopes.join(", ") || "(none)"}`,
    `  webhook events: ${c.webhookEvents.join(", ") || "(none)"}`,
  ].join("\n");
}

/** The key is printed once, apart, so that it is easy to copy and hard to miss. */
export function describeNewKey(apiKey: string): string {
  return `\nAPI key (shown once; store it now, it cannot be shown again):\n\n  ${apiKey}\n`;
}
