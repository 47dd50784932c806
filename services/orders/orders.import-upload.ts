/**
 * Receiving an import (POST /api/v1/order_imports): the NDJSON body arrives as a stream (from
 * the gateway, over the transporter when distributed) and is read line by line with Node's
 * `readline`, which pauses the stream while a chunk is stored, so at most one chunk of lines is
 * held here. Lines are stored 500 to a row; the import is queued (and the client answered 202)
 * only once the last one is stored. A refused upload (too large, too many lines) deletes what
 * it stored; one cut off by a crash stays `receiving`, unseen by the API, until retention
 * prunes it once its lease ran out.
 */
import readline from "node:readline";
import { Transform, type Readable } from "node:stream";
import type { Knex } from "knex";
import { InvalidInputError, PayloadTooLargeError, TooManyLinesError } from "../../shared/errors";
import type { Principal } from "../../shared/security/auth";
import { createImport, dropImport, queueImport, storeChunk, type ImportRow } from "./orders.imports.repository";

/** Lines per stored chunk: one insert each, and what the worker reads at once. */
export const CHUNK_LINES = 500;
/** Renewed with every chunk: an upload that stalls this long (its process died) is pruned. */
const UPLOAD_LEASE_MS = 5 * 60_000;

export interface ImportLimits {
  /** ORDER_IMPORT_MAX_LINES */
  maxLines: number;
  maxBytes: number;
  /** One line is one order body: the limit of POST /orders's body. */
  maxLineBytes: number;
}

export const MAX_IMPORT_BYTES = 50 * 1024 * 1024;

/** Stores every line of `upload` under a new import and queues it; the stream is consumed either way. */
export async function receiveImport(
  db: Knex,
  upload: Readable,
  client: Principal,
  limits: ImportLimits,
): Promise<ImportRow> {
  const id = await createImport(db, client, UPLOAD_LEASE_MS);
  try {
    const total = await storeLines(db, id, upload, limits);
    if (total === 0) throw InvalidInputError.field("", "The body holds no line: send one order (JSON) per line.");
    return await queueImport(db, id, total);
  } catch (err) {
    upload.resume();
    await dropImport(db, id);
    throw err;
  }
}

async function storeLines(db: Knex, id: number, upload: Readable, limits: ImportLimits): Promise<number> {
  const lines = readline.createInterface({ input: withinBytes(upload, limits.maxBytes), crlfDelay: Infinity });
  let chunk: string[] = [];
  let count = 0;
  const flush = async () => {
    if (chunk.length > 0) await storeChunk(db, id, count - chunk.length, chunk.join("\n"), UPLOAD_LEASE_MS);
    chunk = [];
  };
  for await (const line of lines) {
    // Blank lines (a trailing newline, a blank line between orders) hold no order.
    if (line.trim() === "") continue;
    if (Buffer.byteLength(line) > limits.maxLineBytes)
      throw new PayloadTooLargeError(limits.maxLineBytes, `Line ${count} is larger than ${limits.maxLineBytes} bytes.`);
    if (++count > limits.maxLines) throw new TooManyLinesError(limits.maxLines);
    chunk.push(line);
    if (chunk.length === CHUNK_LINES) await flush();
  }
  await flush();
  return count;
}

/** The upload, failing with a 413 once more than `maxBytes` have arrived. */
function withinBytes(upload: Readable, maxBytes: number): Transform {
  let size = 0;
  const counted = new Transform({
    transform(data: Buffer, _encoding, done) {
      size += data.length;
      if (size > maxBytes) done(new PayloadTooLargeError(maxBytes));
      else done(null, data);
    },
  });
  upload.on("error", (err) => counted.destroy(err));
  return upload.pipe(counted);
}
