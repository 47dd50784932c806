import type { Migration } from "../../../shared/db";
import * as createCrm from "./20261121000100_create_crm";

export const migrations: Migration[] = [{ name: "20261121000100_create_crm", ...createCrm }];
