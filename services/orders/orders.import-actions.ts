/**
 * The actions of background imports (docs/api.md, "Background import"): upload one (its body
 * is the call's stream: gateway/routes.ts streams it), follow it, and read its results. An
 * import is its client's alone: anyone else is told it does not exist.
 */
import type { Readable } from "node:stream";
import type { Knex } from "knex";
import { MalformedRequestError, NotFoundError } from "../../shared/errors";
import { resourcePath } from "../../shared/http/responses";
import { pathId } from "../../shared/http/params";
import type { ParamsOf } from "../../shared/schema-types";
import { callerOf, type RequestContext } from "../../shared/security/auth";
import { BODY_LIMIT_BYTES, NDJSON_MEDIA_TYPE } from "../../shared/http/json-body";
import { presentImport, resultsStream, type OrderImport } from "./orders.import-representation";
import { MAX_IMPORT_BYTES, receiveImport } from "./orders.import-upload";
import { countResults, findImport, type ImportRow } from "./orders.imports.repository";
import { createOrderParams } from "./orders.params";

/** What the orders service is built with for imports (runtime/settings-from-config.ts). */
export interface OrderImportSettings {
  /** ORDER_IMPORT_RETENTION */
  retentionMs: number;
  /** ORDER_IMPORT_MAX_LINES */
  maxLines: number;
}

const importIdParams = { $$strict: true, id: pathId("order import") } as const;
type ImportIdParams = ParamsOf<typeof importIdParams>;

/** What the actions need of the service. */
interface ImportHost {
  db: Knex;
  settings: object;
  importQueued(): void;
}

const importPath = (id: number) => resourcePath("order_imports", id);

async function ownImport(host: ImportHost, ctx: RequestContext<ImportIdParams>): Promise<ImportRow> {
  const row = await findImport(host.db, ctx.params.id, callerOf(ctx).clientId);
  if (!row) throw new NotFoundError("order import", ctx.params.id);
  return row;
}

async function present(host: ImportHost, row: ImportRow): Promise<OrderImport> {
  const ended = row.status === "completed" || row.status === "failed";
  return presentImport(row, ended ? row : await countResults(host.db, row.id));
}

export const importActions = {
  startImport: {
    visibility: "published",
    scope: "orders:write",
    summary:
      "Import orders in the background: an NDJSON body (application/x-ndjson), one order per line as POST /orders takes it; 202 once every line is stored, `Location` follows it.",
    // The body streams in: no time limit of a usual call (the gateway's request timeout still holds).
    timeout: 0,
    // Nothing in the query: an unknown parameter is refused like anywhere else.
    params: { $$strict: true },
    /** The schema of each line of the body, for the API reference (gateway/openapi/document.ts). */
    lineParams: createOrderParams,
    async handler(this: ImportHost, ctx: RequestContext<Record<string, never>>): Promise<OrderImport> {
      const upload = (ctx as unknown as { stream: Readable | null }).stream;
      if (!upload) throw new MalformedRequestError(`The body must be NDJSON (Content-Type: ${NDJSON_MEDIA_TYPE}).`);
      const row = await receiveImport(this.db, upload, callerOf(ctx), {
        maxLines: (this.settings as { orderImports: OrderImportSettings }).orderImports.maxLines,
        maxBytes: MAX_IMPORT_BYTES,
        maxLineBytes: BODY_LIMIT_BYTES,
      });
      this.importQueued();
      ctx.meta.$statusCode = 202;
      ctx.meta.$location = importPath(row.id);
      return presentImport(row);
    },
  },

  getImport: {
    visibility: "published",
    scope: "orders:write",
    summary: "An import of yours: its status, counts and timings.",
    params: importIdParams,
    async handler(this: ImportHost, ctx: RequestContext<ImportIdParams>): Promise<OrderImport> {
      return present(this, await ownImport(this, ctx));
    },
  },

  importResults: {
    visibility: "published",
    scope: "orders:write",
    summary:
      "The results of an import of yours so far, as NDJSON (application/x-ndjson): one `{ index, status, order?, problem? }` per line, in line order.",
    params: importIdParams,
    async handler(this: ImportHost, ctx: RequestContext<ImportIdParams>): Promise<Readable> {
      const row = await ownImport(this, ctx);
      (ctx.meta as { $responseType?: string }).$responseType = NDJSON_MEDIA_TYPE;
      return resultsStream(this.db, row.id);
    },
  },
} as const;
