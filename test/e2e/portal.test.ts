/**
 * The subscriber portal in a real browser: Debian's chromium, driven by playwright-core, against
 * the embedded mode with a local webhook receiver. A back-office client subscribes and validates
 * an order (one delivery); in the page, at phone width, it signs in with its key, sees that
 * delivery, resends it and sees the second attempt; then sends a test event, recovers, re-enables
 * a subscription a 410 disabled, and rotates the secret. Along the way: the key stays out of storage,
 * cookies and the DOM, a hostile string in the delivery body stays text, the page loads nothing
 * from elsewhere, and the page's headers forbid inline script and sniffing. Screenshots go to
 * test/artifacts/ (ignored by git): portal-phone.png and portal.png.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser, type Page, type Request } from "playwright-core";
import type { Order } from "../../services/orders/orders.representation";
import type { Subscription } from "../../services/webhooks/webhooks.representation";
import { createApiWorld, type ApiWorld } from "../helpers/api-fixtures";
import { startEmbedded, type EmbeddedProcess } from "../helpers/embedded-process";
import { ADDRESS } from "../helpers/fixtures";
import { api, type ApiClient } from "../helpers/http";
import { CHROMIUM, requires } from "../helpers/prerequisites";
import { alwaysOk, startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";

const ARTIFACTS = path.resolve(__dirname, "../artifacts");
const PHONE = { width: 375, height: 812 };
/** Would run if the page ever put a delivery's body into the DOM as HTML. */
const HOSTILE = "<img src=x onerror=document.title='pwned'>";

// CI installs chromium (.ci/run).
const describeWithBrowser = requires(["chromium"]).describe;

async function eventually(probe: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describeWithBrowser("the subscriber portal in a browser", () => {
  let server: EmbeddedProcess;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let backoffice: ApiClient;
  let world: ApiWorld;
  let subscriptionId: number;
  let page: Page;
  const origins = new Set<string>();
  /** The query of every deliveries read the page made. */
  const deliveryReads: URLSearchParams[] = [];
  const failures: string[] = [];

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startEmbedded({ WEBHOOK_ALLOW_INSECURE_TARGETS: "true" });
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

    const subscribed = await backoffice.put<Subscription>("/api/v1/webhooks", {
      event: "sales_order_validated",
      url: `${receiver.url}/orders`,
    });
    expect(subscribed.status).toBe(201);
    subscriptionId = subscribed.body.id;
    const order = await createOrder();
    expect((await backoffice.post(`/api/v1/orders/${order.id}/validate`)).status).toBe(200);
    await receiver.waitFor((received) => received.length >= 1, 30_000);

    page = await browser.newPage({ viewport: PHONE });
    page.on("request", (req: Request) => {
      const url = new URL(req.url());
      origins.add(url.origin);
      if (url.pathname.endsWith("/deliveries")) deliveryReads.push(url.searchParams);
    });
    page.on("requestfailed", (req: Request) => failures.push(`request failed: ${req.url()}`));
    page.on("pageerror", (err) => failures.push(`page error: ${err.message}`));
    page.on("response", (res) => {
      if (res.status() >= 400) failures.push(`${res.status()} ${new URL(res.url()).pathname}`);
    });
    // A Content-Security-Policy violation is reported here (a failed load is counted above).
    page.on("console", (msg) => {
      if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource"))
        failures.push(`console: ${msg.text()}`);
    });
  }, 120_000);

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

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await receiver?.close();
  }, 30_000);

  it("when /portal is fetched, then it is served with a strict Content-Security-Policy, nosniff and no caching of its own", async () => {
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
  });

  it("when the client signs in with its key at phone width, then it sees its subscription and the delivery the order caused, body as text, and the key is kept nowhere", async () => {
    await page.locator("#api-key").fill(world.backofficeKey);
    await page.locator("#sign-in button[type=submit]").click();
    const subscription = page.locator(`button.subscription[data-subscription-id="${subscriptionId}"]`);
    await subscription.waitFor({ timeout: 15_000 });
    await expect(subscription.textContent()).resolves.toContain("sales_order_validated");

    await subscription.click();
    const delivery = page.locator(".delivery").first();
    await delivery.waitFor({ timeout: 15_000 });
    await expect(delivery.locator(".status").textContent()).resolves.toBe("succeeded");
    await expect(delivery.locator(".attempts li").count()).resolves.toBe(1);
    await expect(delivery.locator(".last-attempt").textContent()).resolves.toMatch(
      /1 attempt, last: HTTP 200 in \d+ ms/,
    );
    await expect(delivery.locator(".body").textContent()).resolves.toContain(HOSTILE);
    await expect(page.locator(".delivery img").count()).resolves.toBe(0);
    await expect(page.title()).resolves.not.toBe("pwned");
    // The newest deliveries in one request each time, not a walk through every page.
    expect(deliveryReads.length).toBeGreaterThan(0);
    expect(deliveryReads.map((q) => [q.get("order"), q.has("cursor")])).toEqual(
      deliveryReads.map(() => ["desc", false]),
    );

    // Evaluated in the page (a string: the test's own types know no DOM).
    const kept = await page.evaluate(`({
      local: localStorage.length,
      session: sessionStorage.length,
      cookie: document.cookie,
      url: location.href,
      html: document.documentElement.outerHTML,
      input: document.getElementById("api-key").value,
    })`);
    expect(kept).toEqual({
      local: 0,
      session: 0,
      cookie: "",
      url: `${server.baseUrl}/portal`,
      html: expect.not.stringContaining(world.backofficeKey),
      input: "",
    });

    // Usable at 375 px: nothing wider than the screen.
    await expect(page.evaluate("document.documentElement.scrollWidth")).resolves.toBeLessThanOrEqual(PHONE.width);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, "portal-phone.png"), fullPage: true });
  }, 60_000);

  it("when the client resends the delivery, then the receiver gets it again and the page shows the second attempt", async () => {
    const delivery = page.locator(".delivery").first();
    const webhookId = receiver.received[0].headers["webhook-id"];
    await delivery.locator("button.resend").click();
    const resent = page.locator(".delivery").first();
    await resent.locator(".attempts li").nth(1).waitFor({ timeout: 20_000 });
    await resent.locator(".status", { hasText: "succeeded" }).waitFor({ timeout: 20_000 });

    const again = receiver.received.filter((r) => r.headers["webhook-id"] === webhookId);
    expect(again).toHaveLength(2);
    await expect(resent.locator(".last-attempt").textContent()).resolves.toMatch(/^2 attempts, last: HTTP 200/);
    await expect(page.locator("#message").textContent()).resolves.toMatch(/queued again/);

    await page.setViewportSize({ width: 1280, height: 900 });
    await page.screenshot({ path: path.join(ARTIFACTS, "portal.png"), fullPage: true });
  }, 60_000);

  it("when the client sends a test event, then a webhook_test delivery reaches the receiver and shows in the page with its attempt", async () => {
    await page.locator("#send-test").click();
    const test = page.locator(".delivery", { has: page.locator(".event", { hasText: "webhook_test" }) });
    await test.locator(".status", { hasText: "succeeded" }).waitFor({ timeout: 20_000 });
    await expect(test.locator(".attempts li").count()).resolves.toBe(1);
    expect(receiver.received.filter((r) => r.headers["x-webhook-event"] === "webhook_test")).toHaveLength(1);
  }, 30_000);

  it("when the client recovers the last day, succeeded ones too, then the recovery is followed to its end and both deliveries are sent again", async () => {
    const before = receiver.received.length;
    await page.locator("#recover-all").check();
    await page.locator("#recover button[type=submit]").click();
    // The order's delivery and the test event's: both in the window, both queued again.
    await page.locator("#recover-progress", { hasText: /^Recovery #\d+: done, 2 of 2 / }).waitFor({ timeout: 20_000 });
    await receiver.waitFor((received) => received.length >= before + 2, 20_000);
  }, 30_000);

  it("when a subscription's endpoint answered 410 Gone, then the page shows it disabled, and Re-enable makes it active again", async () => {
    receiver.answerWith((request) => (request.path === "/gone" ? 410 : 200));
    const gone = await backoffice.put<Subscription>("/api/v1/webhooks", {
      event: "sales_order_created",
      url: `${receiver.url}/gone`,
    });
    expect(gone.status).toBe(201);
    await createOrder();
    await eventually(
      async () => (await backoffice.get<Subscription>(`/api/v1/webhooks/${gone.body.id}`)).body.status === "disabled",
      "the 410 to disable the subscription",
    );

    await page.locator("#refresh").click();
    const item = page.locator(`button.subscription[data-subscription-id="${gone.body.id}"]`);
    await item.locator(".badge", { hasText: "disabled" }).waitFor({ timeout: 10_000 });
    await item.click();
    await page.locator("#health .badge", { hasText: "disabled" }).waitFor({ timeout: 10_000 });
    await page.locator("#enable").click();
    await item.locator(".badge", { hasText: "active" }).waitFor({ timeout: 10_000 });
    await expect(page.locator("#enable").isVisible()).resolves.toBe(false);
    expect((await backoffice.get<Subscription>(`/api/v1/webhooks/${gone.body.id}`)).body.status).toBe("active");
    receiver.answerWith(alwaysOk);
  }, 60_000);

  it("when the client rotates the secret, then the new key and secret are shown once, and gone after signing out", async () => {
    await page.locator(`button.subscription[data-subscription-id="${subscriptionId}"]`).click();
    await page.locator("#subscription-title", { hasText: "sales_order_validated" }).waitFor();
    page.once("dialog", (dialog) => dialog.accept());
    await page.locator("#rotate").click();
    await page.locator("#secrets").waitFor({ state: "visible" });
    await expect(page.locator("#new-secret").textContent()).resolves.toMatch(/^whsec_/);
    await expect(page.locator("#new-key").textContent()).resolves.not.toBe("");
    const read = await backoffice.get<{ rotatedAt: string | null }>(`/api/v1/webhooks/${subscriptionId}`);
    expect(read.body.rotatedAt).not.toBeNull();

    await page.locator("#sign-out").click();
    await expect(page.locator("#sign-in").isVisible()).resolves.toBe(true);
    await expect(page.locator("#new-secret").textContent()).resolves.toBe("");
    await expect(page.locator(".delivery").count()).resolves.toBe(0);
  }, 30_000);

  it("when a wrong key is entered, then the page says so and shows nothing of the account", async () => {
    await page.locator("#api-key").fill("not-a-key");
    await page.locator("#sign-in button[type=submit]").click();
    await page.locator("#message.error").waitFor({ timeout: 10_000 });
    await expect(page.locator("#message").textContent()).resolves.toMatch(/Authentication required|refused/);
    await expect(page.locator("#workspace").isVisible()).resolves.toBe(false);
  }, 30_000);

  it("then every request went to the gateway itself and nothing failed but the wrong key's 401", () => {
    expect([...origins]).toEqual([server.baseUrl]);
    expect(failures).toEqual(["401 /api/v1/webhooks"]);
  });
});
