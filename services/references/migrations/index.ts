import type { Migration } from "../../../shared/db";
import * as createReferences from "./20261121000300_create_references";

export const migrations: Migration[] = [{ name: "20261121000300_create_references", ...createReferences }];
