import type { Migration } from "../../../shared/database/db";
import * as createClients from "./20261121000000_create_clients";
import * as createPortalSessions from "./20261215050000_create_portal_sessions";

export const migrations: Migration[] = [
  { name: "20261121000000_create_clients", ...createClients },
  { name: "20261215050000_create_portal_sessions", ...createPortalSessions },
];
