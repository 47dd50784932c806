/**
 * The HTTP client of the end-to-end tests, and the contract test: EVERY response it receives is
 * checked against the OpenAPI document the server publishes (GET /api/v1/openapi.json) — the
 * status must be one the operation documents, the required headers must be there and match
 * their schemas, the body must match the schema of its media type (problems included) — and a
 * mismatch fails the test with a readable message.
 *
 *   const admin = api(baseUrl).as(adminKey);
 *   const { status, headers, body } = await admin.post<Order>("/api/v1/orders", payload, { "Idempotency-Key": "k1" });
 */
import { DocumentSchemas, dereference, pointer, type Document } from "./openapi-schemas";

export interface ApiResponse<T = unknown> {
  status: number;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** Parsed JSON when the answer is JSON, else the text ("" when empty). */
  body: T;
}

export interface RequestOptions {
  method: string;
  path: string;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as is, instead of `body` (malformed or oversized bodies, NDJSON). */
  rawBody?: string;
  headers?: Record<string, string>;
}

export class ContractViolation extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ContractViolation";
  }
}

const OPENAPI_PATH = "/api/v1/openapi.json";
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];

interface OperationMatch {
  /** The document's path template, e.g. /api/v1/orders/{id}. */
  template: string;
  method: string;
}

/** The published document, the compiled schemas and which operations the tests reached. */
export class Contract {
  private readonly schemas: DocumentSchemas;
  private readonly templates: { template: string; regex: RegExp; params: number }[];
  readonly exercised = new Set<string>();

  constructor(readonly document: Document) {
    this.schemas = new DocumentSchemas(document);
    const paths = Object.keys(document.paths ?? {});
    // Concrete paths before templated ones (OpenAPI: /webhooks/available wins over /webhooks/{id}).
    this.templates = paths
      .map((template) => ({
        template,
        regex: new RegExp(
          `^${template
            .split(/\{[^}]+\}/)
            .map(escapeRegExp)
            .join("[^/]+")}$`,
        ),
        params: (template.match(/\{/g) ?? []).length,
      }))
      .sort((a, b) => a.params - b.params);
  }

  /** Every documented operation, as "METHOD /path/{template}". */
  operations(): string[] {
    const paths = this.document.paths as Record<string, Record<string, unknown>>;
    return Object.entries(paths).flatMap(([template, item]) =>
      Object.keys(item)
        .filter((m) => METHODS.includes(m))
        .map((m) => `${m.toUpperCase()} ${template}`),
    );
  }

  private match(method: string, path: string): OperationMatch | null {
    const paths = this.document.paths as Record<string, Record<string, unknown>>;
    for (const { template, regex } of this.templates) {
      if (regex.test(path) && paths[template][method.toLowerCase()]) return { template, method: method.toLowerCase() };
    }
    return null;
  }

  /** The problems of one exchange with the contract (empty when it keeps it). */
  check(method: string, path: string, response: ApiResponse, contentType: string | null): string[] {
    const op = this.match(method, path);
    if (!op) return [`no operation ${method} ${path} is documented`];
    this.exercised.add(`${op.method.toUpperCase()} ${op.template}`);

    const responsesAt = pointer("paths", op.template, op.method, "responses");
    const documented = Object.keys(dereference(this.document, responsesAt).node);
    const status = String(response.status);
    const key = [status, `${status[0]}XX`, "default"].find((k) => documented.includes(k));
    if (!key) return [`status ${status} is not documented (documented: ${documented.join(", ")})`];

    const { node: spec, pointer: specAt } = dereference(this.document, `${responsesAt}${pointer(key)}`);
    return [...this.checkHeaders(spec, specAt, response), ...this.checkBody(spec, specAt, response, contentType)];
  }

  /** The media type of the operation's request body, if it takes one. */
  requestMediaType(method: string, path: string): string | undefined {
    const op = this.match(method, path.split("?")[0]);
    if (!op) return undefined;
    const body = dereference(this.document, pointer("paths", op.template, op.method)).node.requestBody as
      { content?: Record<string, unknown> } | undefined;
    return body?.content ? Object.keys(body.content)[0] : undefined;
  }

  /** The problems of a webhook request the service sent (lower-cased headers, parsed body), against the document's `webhooks`. */
  checkWebhook(headers: Record<string, string>, body: unknown): string[] {
    const event = headers["x-webhook-event"];
    const webhooks = (this.document.webhooks ?? {}) as Record<string, unknown>;
    if (!event || !(event in webhooks)) return [`X-WEBHOOK-EVENT "${event ?? ""}" is not a documented webhook`];
    this.exercised.add(`WEBHOOK ${event}`);
    const opAt = pointer("webhooks", event, "post");
    const problems: string[] = [];
    const parameters = (dereference(this.document, opAt).node.parameters ?? []) as unknown[];
    parameters.forEach((_p, i) => {
      const { node: param, pointer: paramAt } = dereference(
        this.document,
        `${opAt}${pointer("parameters", String(i))}`,
      );
      if (param.in === "header") problems.push(...this.checkHeader(String(param.name), param, paramAt, headers));
    });
    const bodyAt = `${opAt}${pointer("requestBody", "content", "application/json", "schema")}`;
    for (const e of this.schemas.validate(bodyAt, body)) problems.push(`body ${e}`);
    return problems;
  }

  private checkHeaders(spec: Record<string, unknown>, specAt: string, response: ApiResponse): string[] {
    return Object.keys(spec.headers ?? {}).flatMap((name) => {
      const { node: header, pointer: headerAt } = dereference(this.document, `${specAt}${pointer("headers", name)}`);
      return this.checkHeader(name, header, headerAt, response.headers);
    });
  }

  /** One header against its definition (a Header or a header Parameter object) at `definitionAt`. */
  private checkHeader(
    name: string,
    definition: Record<string, unknown>,
    definitionAt: string,
    headers: Record<string, string>,
  ): string[] {
    const value = headers[name.toLowerCase()];
    if (value === undefined) return definition.required === true ? [`header ${name} is missing`] : [];
    const type = (definition.schema as { type?: unknown } | undefined)?.type;
    const typed = type === "integer" || type === "number" ? Number(value) : value;
    return this.schemas
      .validate(`${definitionAt}${pointer("schema")}`, typed)
      .map((e) => `header ${name}: ${e} (got ${JSON.stringify(value)})`);
  }

  private checkBody(
    spec: Record<string, unknown>,
    specAt: string,
    response: ApiResponse,
    contentType: string | null,
  ): string[] {
    const content = spec.content as Record<string, unknown> | undefined;
    if (!content) {
      return response.body === "" ? [] : [`a body was sent where none is documented: ${preview(response.body)}`];
    }
    const mediaType = (contentType ?? "").split(";")[0].trim().toLowerCase();
    if (!(mediaType in content))
      return [`Content-Type "${contentType ?? ""}" is not documented (documented: ${Object.keys(content).join(", ")})`];
    const schemaAt = `${specAt}${pointer("content", mediaType, "schema")}`;
    // NDJSON: the schema is each line's.
    if (mediaType === "application/x-ndjson")
      return String(response.body)
        .split("\n")
        .filter((line) => line !== "")
        .flatMap((line, i) => this.schemas.validate(schemaAt, JSON.parse(line)).map((e) => `line ${i} ${e}`));
    return this.schemas.validate(schemaAt, response.body).map((e) => `body ${e}`);
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function preview(body: unknown): string {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return text.length > 600 ? `${text.slice(0, 600)}…` : text;
}

/** Requests a client may send again when the connection failed under them (RFC 9110 §9.2.2). */
const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/** undici's failure for a connection the other side closed before any answer ("other side closed"). */
function closedUnderfoot(err: unknown): boolean {
  return (err as { cause?: { code?: string } }).cause?.code === "UND_ERR_SOCKET";
}

async function exchange(
  baseUrl: string,
  options: RequestOptions,
  apiKey: string | null,
): Promise<{ response: ApiResponse; contentType: string | null }> {
  const headers: Record<string, string> = { Accept: "application/json", ...options.headers };
  if (apiKey !== null) headers.Authorization = `Bearer ${apiKey}`;
  let payload: string | undefined = options.rawBody;
  if (payload === undefined && options.body !== undefined) payload = JSON.stringify(options.body);
  if (payload !== undefined) headers["Content-Type"] ??= "application/json";

  const send = () => fetch(baseUrl + options.path, { method: options.method, headers, body: payload });
  let res: Response;
  try {
    res = await send();
  } catch (err) {
    if (!IDEMPOTENT_METHODS.has(options.method.toUpperCase()) || !closedUnderfoot(err)) throw err;
    // The pooled connection was closed by the server's keep-alive timer as the request left
    // (on a busy machine the client's own timer, a second earlier, can fire late): sent again
    // once on a new connection, as browsers and HTTP clients do for an idempotent request.
    res = await send();
  }
  const text = await res.text();
  const contentType = res.headers.get("content-type");
  const isJson = /^application\/([\w.+-]*\+)?json/i.test(contentType ?? "");
  const response: ApiResponse = {
    status: res.status,
    headers: Object.fromEntries([...res.headers.entries()].map(([k, v]) => [k.toLowerCase(), v])),
    body: isJson && text !== "" ? JSON.parse(text) : text,
  };
  return { response, contentType };
}

/**
 * A JSON body for an operation that takes NDJSON (POST /order_imports) goes as one line of it,
 * so the tests that draw bodies from the document send what it says.
 */
function asDocumented(contract: Contract, options: RequestOptions): RequestOptions {
  if (options.body === undefined || contract.requestMediaType(options.method, options.path) !== NDJSON) return options;
  return {
    ...options,
    body: undefined,
    rawBody: `${JSON.stringify(options.body)}\n`,
    headers: { "Content-Type": NDJSON, ...options.headers },
  };
}

const NDJSON = "application/x-ndjson";

const contracts = new Map<string, Promise<Contract>>();

/** The contract of the server at `baseUrl`: its published document, fetched once. */
export function contractOf(baseUrl: string): Promise<Contract> {
  let contract = contracts.get(baseUrl);
  if (!contract) {
    contract = exchange(baseUrl, { method: "GET", path: OPENAPI_PATH }, null).then(({ response }) => {
      if (response.status !== 200)
        throw new Error(`GET ${OPENAPI_PATH} answered ${response.status}: ${preview(response.body)}`);
      return new Contract(response.body as Document);
    });
    contracts.set(baseUrl, contract);
  }
  return contract;
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string | null = null,
  ) {}

  /** The same client, calling with this API key (null: without any). */
  as(apiKey: string | null): ApiClient {
    return new ApiClient(this.baseUrl, apiKey);
  }

  contract(): Promise<Contract> {
    return contractOf(this.baseUrl);
  }

  async request<T = unknown>(options: RequestOptions): Promise<ApiResponse<T>> {
    const contract = await this.contract();
    const { response, contentType } = await exchange(this.baseUrl, asDocumented(contract, options), this.apiKey);
    const path = options.path.split("?")[0];
    const problems = contract.check(options.method, path, response, contentType);
    if (problems.length > 0) {
      throw new ContractViolation(
        `The answer to ${options.method} ${options.path} breaks the OpenAPI document: ${response.status}` +
          ` (X-Request-ID ${response.headers["x-request-id"] ?? "none"})\n` +
          problems.map((p) => `  - ${p}`).join("\n") +
          `\n  body: ${preview(response.body)}`,
      );
    }
    return response as ApiResponse<T>;
  }

  get<T = unknown>(path: string, headers?: Record<string, string>): Promise<ApiResponse<T>> {
    return this.request<T>({ method: "GET", path, headers });
  }

  post<T = unknown>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>> {
    return this.request<T>({ method: "POST", path, body, headers });
  }

  put<T = unknown>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>> {
    return this.request<T>({ method: "PUT", path, body, headers });
  }

  delete<T = unknown>(path: string, headers?: Record<string, string>): Promise<ApiResponse<T>> {
    return this.request<T>({ method: "DELETE", path, headers });
  }
}

/** A client of the API at `baseUrl` (e.g. http://127.0.0.1:3000), without an API key until `.as(key)`. */
export function api(baseUrl: string): ApiClient {
  return new ApiClient(baseUrl.replace(/\/$/, ""));
}
