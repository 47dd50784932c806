/**
 * The API reference page in a real browser: Debian's chromium, driven by playwright-core, opens
 * GET /docs, Swagger UI (served from our own node_modules, no CDN) renders the document, the
 * endpoints are listed, and screenshots are kept in test/artifacts/ (ignored by git): docs.png
 * (the page) and docs-create-order.png (POST /api/v1/orders opened).
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser, type Request } from "playwright-core";
import { startEmbedded, type EmbeddedProcess } from "../helpers/embedded-process";
import { CHROMIUM, requires } from "../helpers/prerequisites";

const ARTIFACTS = path.resolve(__dirname, "../artifacts");

let server: EmbeddedProcess;
let browser: Browser;

// CI installs chromium (.ci/run).
const chromiumThere = requires(["chromium"]);
const itWithBrowser = chromiumThere.it;

beforeAll(async () => {
  if (!chromiumThere.met) return;
  server = await startEmbedded();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
}, 30_000);

itWithBrowser(
  "when /docs is opened in a browser, then Swagger UI lists the endpoints from our own server only, and a screenshot is saved",
  async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
    const origins = new Set<string>();
    const failed: string[] = [];
    page.on("request", (req: Request) => origins.add(new URL(req.url()).origin));
    page.on("requestfailed", (req: Request) => failed.push(req.url()));
    page.on("pageerror", (err) => failed.push(`page error: ${err.message}`));

    const response = await page.goto(`${server.baseUrl}/docs`);
    expect(response?.status()).toBe(200);
    // Wait for each path looked for, not for the first operation drawn.
    const expected = [
      "/api/v1/orders",
      "/api/v1/packaging_references",
      "/api/v1/webhooks/available",
      "/api/v1/contact_references",
    ];
    for (const p of expected)
      await page.locator(".opblock-summary-path", { hasText: p }).first().waitFor({ timeout: 30_000 });

    const paths = await page.locator(".opblock-summary-path").allTextContents();
    const listed = paths.map((p) => p.replace(/\u200b/g, "").trim());
    expect(listed).toEqual(expect.arrayContaining(expected));
    // Every operation but OPTIONS is drawn, each once, and each webhook (Swagger UI once drew
    // three of 143 operations and nothing after them: gateway/openapi/docs-routes.ts).
    const doc = (await (await fetch(`${server.baseUrl}/api/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
      webhooks: Record<string, unknown>;
    };
    const drawn = Object.values(doc.paths).flatMap((ops) => Object.keys(ops).filter((m) => m !== "options"));
    expect(listed).toHaveLength(drawn.length + Object.keys(doc.webhooks).length);
    await expect(page.locator(".info .title").textContent()).resolves.toContain("Order intake API");

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, "docs.png"), fullPage: false });

    // An operation opens with its parameters and the request body schema converted from the action's params.
    const createOrder = page.locator("#operations-Orders-ordersCreate");
    await createOrder.locator(".opblock-summary").click();
    await createOrder.locator(".opblock-body").waitFor();
    await expect(createOrder.locator(".parameters").textContent()).resolves.toContain("Idempotency-Key");
    await expect(createOrder.locator(".opblock-section-request-body").textContent()).resolves.toContain("Request body");
    await expect(createOrder.locator(".responses-table").textContent()).resolves.toMatch(/201[\s\S]*422/);
    await createOrder.screenshot({ path: path.join(ARTIFACTS, "docs-create-order.png") });

    expect(failed).toEqual([]);
    expect([...origins]).toEqual([server.baseUrl]);
  },
  60_000,
);
