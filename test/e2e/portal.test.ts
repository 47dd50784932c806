/**
 * The subscriber portal in a real browser: Debian's chromium, driven by playwright-core, against
 * the embedded mode with a local webhook receiver (issue 25's "Done when"). A back-office client
 * mints a sign-in link with its key; the page, opened on it, exchanges it for a session; through
 * the page the user creates a subscription to the receiver (event chosen from the catalogue),
 * an order event is caused, its delivery is found by `webhook-id`, opened (the exact body sent
 * and the receiver's answer), resent; the URL is edited, the subscription paused and enabled,
 * a test event sent, a recovery followed, the secret rotated, the subscription deleted. The
 * session cannot read orders. axe-core (injected into the page) finds no serious or critical
 * violation on any screen, light or dark; the page with its assets weighs under 100 KB; it loads
 * nothing from elsewhere, and a hostile string in a body stays text. Screenshots at desktop and
 * phone width are written to docs/ (PORTAL_SCREENSHOTS=1) or test/artifacts/.
 */
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser, type Page, type Request } from "playwright-core";
import type { Order } from "../../services/orders/orders.representation";
import type { Subscription } from "../../services/webhooks/webhooks.representation";
import { createApiWorld, type ApiWorld } from "../helpers/api-fixtures";
import { startEmbedded, type EmbeddedProcess } from "../helpers/embedded-process";
import { ADDRESS } from "../helpers/fixtures";
import { api, type ApiClient } from "../helpers/http";
import { CHROMIUM, requires } from "../helpers/prerequisites";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

const SCREENSHOTS = process.env.PORTAL_SCREENSHOTS
  ? path.resolve(__dirname, "../../docs")
  : path.resolve(__dirname, "../artifacts");
const PHONE = { width: 375, height: 812 };
const DESKTOP = { width: 1280, height: 900 };
/** Would run if the page ever put a delivery's body into the DOM as HTML. */
const HOSTILE = "<img src=x onerror=document.title='pwned'>";
const ANSWER = "thanks from the receiver";
/**
 * axe-core's own script, evaluated in the page through the DevTools protocol: page.addScriptTag
 * would add an inline <script>, which the page's CSP (script-src 'self', Trusted Types) blocks,
 * as it should.
 */
const AXE_SOURCE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const PAGE_BUDGET_BYTES = 100 * 1024;

// CI installs chromium (.ci/run).
const describeWithBrowser = requires(["chromium"]).describe;

async function eventually(probe: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

interface AxeViolation {
  id: string;
  impact: string | null;
  nodes: { target: string[] }[];
}

describeWithBrowser("the subscriber portal in a browser", () => {
  let server: EmbeddedProcess;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let backoffice: ApiClient;
  let world: ApiWorld;
  let subscriptionId: number;
  let sessionToken = "";
  let page: Page;
  const origins = new Set<string>();
  const failures: string[] = [];
  const screensChecked: string[] = [];

  beforeAll(async () => {
    receiver = await startReceiver((r) =>
      r.path === "/gone" ? 410 : { status: 200, afterMs: 0, headers: { "X-Receiver": "portal-test" }, body: ANSWER },
    );
    server = await startEmbedded({ WEBHOOK_ALLOW_INSECURE_TARGETS: "true", PORTAL_KEY_SIGN_IN: "on" });
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
    const admin = api(server.baseUrl).as(server.adminKey);
    world = await createApiWorld(admin);
    backoffice = admin.as(world.backofficeKey);

    page = await browser.newPage({ viewport: DESKTOP });
    page.on("request", (req: Request) => origins.add(new URL(req.url()).origin));
    page.on("response", async (res) => {
      if (res.status() >= 400) failures.push(`${res.status()} ${new URL(res.url()).pathname}`);
      if (res.url().endsWith("/portal_sessions/exchange") && res.ok())
        sessionToken = ((await res.json()) as { token: string }).token;
    });
    page.on("requestfailed", (req: Request) => failures.push(`request failed: ${req.url()}`));
    page.on("pageerror", (err) => failures.push(`page error: ${err.message}`));
    // A Content-Security-Policy violation is reported here (a failed load is counted above).
    page.on("console", (msg) => {
      if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource"))
        failures.push(`console: ${msg.text()}`);
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await receiver?.close();
  }, 30_000);

  /** An order whose invoicing recipient is HOSTILE, so that every delivery body about it carries the string. */
  async function createOrder(): Promise<Order> {
    const order = await backoffice.post<Order>("/api/v1/orders", {
      contact: { id: world.contactId },
      invoicingAddress: { ...ADDRESS, recipient: HOSTILE },
      deliveryAddress: ADDRESS,
      items: [{ packaging: world.packagingIds[0], orderedQuantity: 1 }],
    });
    expect(order.status).toBe(201);
    return order.body;
  }

  /**
   * axe-core on the screen as it is, light and dark: no serious or critical violation.
   */
  async function expectAccessible(screen: string): Promise<void> {
    for (const colorScheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme });
      if (!(await page.evaluate("typeof window.axe !== 'undefined'"))) await page.evaluate(AXE_SOURCE);
      const violations = await page.evaluate<AxeViolation[]>(
        "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => ({ target: n.target })) })))",
      );
      const serious = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
      expect({ screen, colorScheme, serious }).toEqual({ screen, colorScheme, serious: [] });
    }
    await page.emulateMedia({ colorScheme: "light" });
    screensChecked.push(screen);
  }

  it("when /portal is fetched, then it is served with a strict Content-Security-Policy, and with its assets weighs under 100 KB", async () => {
    const response = await page.goto(`${server.baseUrl}/portal`);
    expect(response?.status()).toBe(200);
    const headers = response!.headers();
    const policy = headers["content-security-policy"];
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toContain("require-trusted-types-for 'script'");
    expect(policy).not.toContain("unsafe-inline");
    expect(headers["x-content-type-options"]).toBe("nosniff");
    expect(headers["cache-control"]).toBe("no-cache");
    await expect(page.locator("#sign-in").isVisible()).resolves.toBe(true);

    let weight = 0;
    for (const file of ["/portal", "/portal/portal.js", "/portal/portal.css"])
      weight += (await (await fetch(`${server.baseUrl}${file}`)).arrayBuffer()).byteLength;
    expect(weight).toBeLessThan(PAGE_BUDGET_BYTES);
    await expectAccessible("sign-in");
  });

  it("when the user opens a sign-in link minted by the API, then the page signs in with a session, and the token leaves the address bar and is kept nowhere", async () => {
    const minted = await backoffice.post<{ url: string; expiresAt: string }>("/api/v1/portal_sessions");
    expect(minted.status).toBe(201);
    const link = new URL(minted.body.url, server.baseUrl);
    const linkToken = link.hash.replace("#link=", "");
    await page.goto(`${server.baseUrl}/portal${link.hash}`);
    await page.locator("#workspace").waitFor({ state: "visible", timeout: 15_000 });
    await expect(page.locator("#who").textContent()).resolves.toMatch(
      /session until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d/,
    );
    expect(sessionToken).toMatch(/^oips_/);

    const kept = await page.evaluate(`({
      local: localStorage.length,
      session: sessionStorage.length,
      cookie: document.cookie,
      url: location.href,
      html: document.documentElement.outerHTML,
    })`);
    expect(kept).toEqual({
      local: 0,
      session: 0,
      cookie: "",
      url: `${server.baseUrl}/portal`,
      html: expect.not.stringContaining(linkToken),
    });
    expect(JSON.stringify(kept)).not.toContain(sessionToken);
    // The link was used: opening it again signs nobody in.
    expect((await api(server.baseUrl).as(linkToken).post("/api/v1/portal_sessions/exchange")).status).toBe(401);
    failures.length = 0;
    await expectAccessible("subscriptions");
  }, 60_000);

  it("when the session is used outside the webhooks, then it is refused: no orders, no references", async () => {
    const session = api(server.baseUrl).as(sessionToken);
    expect((await session.get("/api/v1/orders")).status).toBe(403);
    expect((await session.get("/api/v1/contact_references")).status).toBe(403);
    expect((await session.get("/api/v1/webhooks")).status).toBe(200);
  });

  it("when the user creates a subscription from the catalogue, then it exists, and its key and secret are shown once, the secret revealed on a click", async () => {
    await page.locator("#new-subscription").click();
    await page.locator("#create-event").selectOption("sales_order_validated");
    await expect(page.locator("#create-event-description").textContent()).resolves.not.toBe("");
    await expect(page.locator("#create-event-example").textContent()).resolves.toContain("{");
    await page.locator("#create-url").fill(`${receiver.url}/orders`);
    await page.locator("#create-ordering").selectOption("none");
    await page.locator("#create button[type=submit]").click();
    await page.locator("#secrets").waitFor({ state: "visible", timeout: 15_000 });
    await expect(page.locator("#new-secret").textContent()).resolves.toMatch(/^whsec_/);
    await expect(page.locator("#new-secret").getAttribute("class")).resolves.toContain("masked");
    await page.locator("#reveal-secret").click();
    await expect(page.locator("#new-secret").getAttribute("class")).resolves.not.toContain("masked");

    const listed = await backoffice.get<Subscription[]>("/api/v1/webhooks");
    const made = listed.body.find((s) => s.url === `${receiver.url}/orders`);
    expect(made).toMatchObject({ event: "sales_order_validated", status: "active" });
    subscriptionId = made!.id;
    await page.locator(`button.subscription[data-subscription-id="${subscriptionId}"][aria-pressed="true"]`).waitFor();
    await expectAccessible("new subscription and its secret");
    await page.locator("#hide-secrets").click();
  }, 60_000);

  it("when an order event is caused, then its delivery is found by webhook-id, and opened it shows the exact body sent and the receiver's answer", async () => {
    const order = await createOrder();
    expect((await backoffice.post(`/api/v1/orders/${order.id}/validate`)).status).toBe(200);
    await receiver.waitFor((received) => received.some((r) => r.path === "/orders"), 30_000);
    const sent = receiver.received.find((r) => r.path === "/orders")!;
    const webhookId = sent.headers["webhook-id"];

    await page.locator("#search-webhook-id").fill(webhookId);
    await page.locator("#log-filters button[type=submit]").click();
    const row = page.locator(`tr.delivery[data-webhook-id="${webhookId}"]`);
    await row.waitFor({ timeout: 15_000 });
    await expect(page.locator("tr.delivery").count()).resolves.toBe(1);
    await expect(row.locator(".when").textContent()).resolves.toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/);
    await row.locator("button.open").click();
    await page.locator("#detail").waitFor({ state: "visible" });
    await expect(page.locator("#detail-title").textContent()).resolves.toContain(webhookId);
    await expect(page.locator("#detail-body").textContent()).resolves.toBe(sent.body);
    await expect(page.locator("#detail-headers").textContent()).resolves.toContain("masked");
    await expect(page.locator("#detail-headers").textContent()).resolves.not.toContain(sent.headers["x-webhook-key"]);
    const attempt = page.locator("#detail-attempts li").first();
    await expect(attempt.locator(".outcome").textContent()).resolves.toMatch(/HTTP 200 in \d+ ms/);
    await expect(attempt.locator(".answer").textContent()).resolves.toBe(ANSWER);
    await expect(attempt.locator(".headers").textContent()).resolves.toContain("portal-test");
    await expect(page.locator("#detail img").count()).resolves.toBe(0);
    await expect(page.title()).resolves.not.toBe("pwned");
    await expectAccessible("delivery detail");
  }, 60_000);

  it("when the user resends the delivery, then the receiver gets it again and the page shows the second attempt", async () => {
    const webhookId = await page.locator("#detail-webhook-id").textContent();
    await page.locator("#resend").click();
    await page.locator("#detail-attempts li").nth(1).waitFor({ timeout: 20_000 });
    expect(receiver.received.filter((r) => r.headers["webhook-id"] === webhookId)).toHaveLength(2);
    await expect(page.locator("#message").textContent()).resolves.toMatch(/queued again/);
    await expect(page.locator("#charts svg").count()).resolves.toBe(3);
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, "portal-desktop.png"), fullPage: true });
    await expectAccessible("charts and log");
  }, 60_000);

  it("when the user edits the URL, pauses and enables the subscription, then the API shows each change", async () => {
    await page.locator("#edit-url").fill(`${receiver.url}/orders-v2`);
    await page.locator("#edit-description").fill("edited in the portal");
    await page.locator("#edit button[type=submit]").click();
    await eventually(
      async () =>
        (await backoffice.get<Subscription>(`/api/v1/webhooks/${subscriptionId}`)).body.url ===
        `${receiver.url}/orders-v2`,
      "the URL to change",
    );
    const item = page.locator(`button.subscription[data-subscription-id="${subscriptionId}"]`);
    await page.locator("#disable").click();
    await item.locator(".badge", { hasText: "disabled" }).waitFor({ timeout: 10_000 });
    expect((await backoffice.get<Subscription>(`/api/v1/webhooks/${subscriptionId}`)).body.status).toBe("disabled");
    await page.locator("#enable").click();
    await item.locator(".badge", { hasText: "active" }).waitFor({ timeout: 10_000 });
    expect((await backoffice.get<Subscription>(`/api/v1/webhooks/${subscriptionId}`)).body.status).toBe("active");
  }, 60_000);

  it("when the user sends a test event and recovers the last day, then both reach the receiver and the recovery is followed to its end", async () => {
    await page.locator("#search-webhook-id").fill("");
    await page.locator("#send-test").click();
    await page
      .locator("tr.delivery", { has: page.locator(".event", { hasText: "webhook_test" }) })
      .waitFor({ timeout: 20_000 });
    const before = receiver.received.length;
    await page.locator("#recover-all").check();
    await page.locator("#recover button[type=submit]").click();
    await page
      .locator("#recover-progress", { hasText: /^Recovery #\d+: done — 2 deliveries examined, 2 queued again\.$/ })
      .waitFor({ timeout: 20_000 });
    await receiver.waitFor((received) => received.length >= before + 2, 20_000);
  }, 60_000);

  it("when the user rotates the secret and then deletes the subscription, confirming by its name, then it is gone", async () => {
    page.once("dialog", (dialog) => dialog.accept());
    await page.locator("#rotate").click();
    await page.locator("#secrets").waitFor({ state: "visible" });
    await expect(page.locator("#new-secret").textContent()).resolves.toMatch(/^whsec_/);
    await page.locator("#hide-secrets").click();

    let question = "";
    page.once("dialog", (dialog) => {
      question = dialog.message();
      return dialog.accept();
    });
    await page.locator("#delete").click();
    await page.locator(`button.subscription[data-subscription-id="${subscriptionId}"]`).waitFor({ state: "detached" });
    expect(question).toContain(`${receiver.url}/orders-v2`);
    expect((await backoffice.get<Subscription[]>("/api/v1/webhooks")).body.map((s) => s.id)).not.toContain(
      subscriptionId,
    );
  }, 60_000);

  it("when the page is as wide as a phone, then nothing overflows", async () => {
    await page.setViewportSize(PHONE);
    await page.locator("#refresh").click();
    await expect(page.evaluate("document.documentElement.scrollWidth")).resolves.toBeLessThanOrEqual(PHONE.width);
    await page.screenshot({ path: path.join(SCREENSHOTS, "portal-phone.png"), fullPage: true });
  }, 30_000);

  it("when the user signs out, then the session is revoked on the server", async () => {
    await page.locator("#sign-out").click();
    await expect(page.locator("#workspace").isVisible()).resolves.toBe(false);
    await eventually(
      async () => (await api(server.baseUrl).as(sessionToken).get("/api/v1/webhooks")).status === 401,
      "the session to be refused",
    );
  }, 30_000);

  it("when a wrong key is typed, then the page says so and shows nothing of the account", async () => {
    await page.locator("#api-key").fill("not-a-key");
    await page.locator("#sign-in button[type=submit]").click();
    await page.locator("#message.error").waitFor({ timeout: 10_000 });
    await expect(page.locator("#workspace").isVisible()).resolves.toBe(false);
  }, 30_000);

  it("then every request went to the gateway itself, nothing failed but the wrong key's 401, and axe-core checked every screen", () => {
    expect([...origins]).toEqual([server.baseUrl]);
    expect(failures).toEqual(["401 /api/v1/webhooks"]);
    expect(screensChecked).toEqual([
      "sign-in",
      "subscriptions",
      "new subscription and its secret",
      "delivery detail",
      "charts and log",
    ]);
  });
});
