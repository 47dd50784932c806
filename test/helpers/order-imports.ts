/**
 * Background imports over HTTP for the end-to-end tests: upload NDJSON, wait for the import
 * to end, and read its results.
 */
import type { OrderImport, OrderImportResult } from "../../services/orders/orders.import-representation";
import { EVENTUALLY_MS } from "./deadlines";
import type { ApiClient, ApiResponse } from "./http";

export const NDJSON = "application/x-ndjson";

/** One order per line. */
export function ndjson(lines: unknown[]): string {
  return lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n") + "\n";
}

export function uploadImport(client: ApiClient, body: string): Promise<ApiResponse<OrderImport>> {
  return client.request<OrderImport>({
    method: "POST",
    path: "/api/v1/order_imports",
    rawBody: body,
    headers: { "Content-Type": NDJSON },
  });
}

/**
 * The import once it ended (completed or failed). While the process that serves it restarts,
 * the gateway answers 503 (or, embedded, nothing answers): asked again until the deadline.
 */
export async function importEnded(
  client: ApiClient,
  location: string,
  timeoutMs = EVENTUALLY_MS,
): Promise<OrderImport> {
  const deadline = Date.now() + timeoutMs;
  let last: string;
  for (;;) {
    const answer = await client.get<OrderImport>(location).catch((err: Error) => err);
    if (!(answer instanceof Error)) {
      const { status, body } = answer;
      if (status !== 200 && status !== 503) throw new Error(`GET ${location} answered ${status}`);
      if (status === 200 && (body.status === "completed" || body.status === "failed")) return body;
      last = `${status} ${JSON.stringify(body)}`;
    } else last = answer.message;
    if (Date.now() > deadline) throw new Error(`import not ended in time: ${last}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A GET, asked once more when the connection broke: on a loaded machine a kept-alive socket
 * the server is closing may be reused by the client (a GET is safe to repeat).
 */
export async function getOnceMore<T>(client: ApiClient, path: string, headers?: Record<string, string>) {
  try {
    return await client.get<T>(path, headers);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    return client.get<T>(path, headers);
  }
}

export async function importResults(client: ApiClient, location: string): Promise<OrderImportResult[]> {
  const { status, headers, body } = await getOnceMore<string>(client, `${location}/results`, { Accept: NDJSON });
  if (status !== 200) throw new Error(`GET ${location}/results answered ${status}`);
  expectNdjson(headers["content-type"]);
  return body
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as OrderImportResult);
}

function expectNdjson(contentType: string | undefined): void {
  if (!contentType?.startsWith(NDJSON)) throw new Error(`results came as ${contentType}`);
}

/** The path of a Location header (absolute with PUBLIC_BASE_URL, relative without). */
export function pathOf(location: string): string {
  return location.startsWith("http") ? new URL(location).pathname : location;
}
