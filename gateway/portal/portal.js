/*
 * The subscriber portal: plain browser JavaScript, no build step, no library. It calls only the
 * public API (same origin, /api/v1) with the key the user typed, which lives in one variable of
 * this closure: never in storage, cookies or the URL.
 *
 * Every string from the API reaches the page as text (textContent, attributes set from a fixed
 * list): the page's Content-Security-Policy requires Trusted Types, so an HTML-string sink such
 * as innerHTML would throw rather than run a subscriber-controlled string.
 */
"use strict";

(() => {
  const API = "/api/v1";
  /** How many deliveries the page shows, newest first: one request (`?order=desc`). */
  const RECENT = 50;
  /** After a resend, a test or a recovery: how long the page keeps re-reading the deliveries. */
  const WATCH_MS = 20_000;
  const WATCH_EVERY_MS = 1_000;

  /** The operations whose buttons depend on the server offering them (read from its OpenAPI document). */
  const OPTIONAL = {
    test: "POST /api/v1/webhooks/{id}/test",
    enable: "POST /api/v1/webhooks/{id}/enable",
    recover: "POST /api/v1/webhooks/{id}/recover",
    recovery: "GET /api/v1/webhooks/{id}/recoveries/{recoveryId}",
    stats: "GET /api/v1/webhooks/{id}/stats",
  };
  const STATUSES = new Set(["pending", "succeeded", "failed", "refused", "cancelled", "active", "disabled"]);

  const $ = (id) => document.getElementById(id);

  let apiKey = null;
  /** Bumped on sign-in and sign-out, and when another subscription is chosen: late answers of the previous one are dropped. */
  let generation = 0;
  let selected = null;
  let selectedStats = null;
  let offered = new Set();

  class ApiError extends Error {
    constructor(status, problem) {
      super(describeProblem(status, problem));
      this.status = status;
    }
  }

  function describeProblem(status, problem) {
    if (!problem || typeof problem !== "object") return `The server answered ${status}.`;
    const fields = Array.isArray(problem.errors) ? problem.errors.map((e) => `${e.path || "body"}: ${e.message}`) : [];
    return (
      [problem.title, problem.detail, ...fields].filter((t) => typeof t === "string" && t).join(" — ") ||
      `The server answered ${status}.`
    );
  }

  /** The cursor of a `Link: <…?cursor=…>; rel="next"` header: the next page is then asked of this origin. */
  function nextCursor(link) {
    const match = /<([^>]+)>\s*;\s*rel="next"/.exec(link || "");
    return match ? new URL(match[1], location.href).searchParams.get("cursor") : null;
  }

  async function call(method, path, body) {
    const headers = { Authorization: `Bearer ${apiKey}`, Accept: "application/json, application/problem+json" };
    const init = { method, headers, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(API + path, init);
    const text = await response.text();
    let data;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!response.ok) throw new ApiError(response.status, data);
    return { status: response.status, data, next: nextCursor(response.headers.get("Link")) };
  }

  /** Which optional operations this server documents: their buttons show only then. */
  async function readOfferedOperations() {
    try {
      const response = await fetch(`${API}/openapi.json`, { cache: "no-store", credentials: "omit" });
      const document = await response.json();
      const found = new Set();
      for (const [path, item] of Object.entries(document.paths || {})) {
        for (const method of Object.keys(item)) found.add(`${method.toUpperCase()} ${path}`);
      }
      offered = found;
    } catch {
      offered = new Set();
    }
  }

  function offers(operation) {
    return offered.has(OPTIONAL[operation]);
  }

  // --- messages and small DOM helpers -------------------------------------------------------

  function say(text, kind = "info") {
    const box = $("message");
    box.textContent = text;
    box.className = `message ${kind === "error" ? "error" : "info"}`;
    box.hidden = !text;
  }

  function element(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function badge(node, status) {
    node.textContent = String(status);
    node.classList.add(STATUSES.has(status) ? `status-${status}` : "status-other");
  }

  function when(iso) {
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
  }

  const plural = (count, noun) => `${count} ${noun}${count === 1 ? "" : "s"}`;
  const percent = (ratio) => `${(ratio * 100).toFixed(1).replace(/\.0$/, "")} %`;

  /** Runs an action with its button disabled; problems are shown, a refused key signs out. */
  async function busy(button, action) {
    if (button) button.disabled = true;
    try {
      await action();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return signOut("This API key was refused: sign in again.");
      say(err instanceof Error ? err.message : String(err), "error");
    } finally {
      if (button) button.disabled = false;
    }
  }

  // --- signing in and out ---------------------------------------------------------------------

  async function signIn(event) {
    const input = $("api-key");
    const key = input.value.trim();
    if (!key) return;
    apiKey = key;
    // Out of the DOM as soon as it is in memory.
    input.value = "";
    generation += 1;
    await busy(event.submitter, async () => {
      await Promise.all([readOfferedOperations(), loadSubscriptions()]);
      if (!apiKey) return;
      say("");
      $("sign-in").hidden = true;
      $("workspace").hidden = false;
      $("sign-out").hidden = false;
    });
    // Refused for another reason than the key (no webhooks scope, unreachable): keep nothing.
    if ($("workspace").hidden) apiKey = null;
  }

  function signOut(reason) {
    apiKey = null;
    selected = null;
    generation += 1;
    for (const id of ["subscriptions", "deliveries", "health"]) $(id).replaceChildren();
    hideSecrets();
    $("workspace").hidden = true;
    $("subscription").hidden = true;
    $("sign-out").hidden = true;
    $("sign-in").hidden = false;
    say(typeof reason === "string" ? reason : "", typeof reason === "string" ? "error" : "info");
  }

  // --- subscriptions --------------------------------------------------------------------------

  function stateOf(subscription) {
    if (typeof subscription.status === "string") return subscription.status;
    if (subscription.enabled === false || subscription.disabledAt) return "disabled";
    return "active";
  }

  async function loadSubscriptions() {
    const mine = generation;
    const { data } = await call("GET", "/webhooks?limit=500");
    if (mine !== generation) return;
    const list = $("subscriptions");
    list.replaceChildren();
    $("no-subscriptions").hidden = data.length > 0;
    for (const subscription of data) {
      const item = $("subscription-item").content.cloneNode(true);
      const button = item.querySelector("button");
      button.dataset.subscriptionId = String(subscription.id);
      button.setAttribute("aria-pressed", String(selected?.id === subscription.id));
      item.querySelector(".event").textContent = subscription.event;
      item.querySelector(".url").textContent = subscription.url;
      badge(item.querySelector(".badge"), stateOf(subscription));
      button.addEventListener("click", () => busy(button, () => select(subscription.id)));
      list.append(item);
    }
    if (selected) {
      const still = data.find((s) => s.id === selected.id);
      if (still) showSubscription(still);
    }
  }

  async function select(id) {
    generation += 1;
    hideSecrets();
    $("recover-progress").hidden = true;
    for (const b of $("subscriptions").querySelectorAll("button"))
      b.setAttribute("aria-pressed", String(b.dataset.subscriptionId === String(id)));
    const mine = generation;
    const { data } = await call("GET", `/webhooks/${id}`);
    if (mine !== generation) return;
    selectedStats = null;
    showSubscription(data);
    await loadDeliveries();
  }

  function showSubscription(subscription) {
    selected = subscription;
    $("subscription").hidden = false;
    $("subscription-title").textContent = subscription.event;
    $("subscription-url").textContent = subscription.url;
    const state = stateOf(subscription);
    $("send-test").hidden = !offers("test");
    $("enable").hidden = !(offers("enable") && state === "disabled");
    $("recover").hidden = !offers("recover");
    if (!$("recover-since").value) $("recover-since").value = localInputValue(new Date(Date.now() - 24 * 3600_000));
    showHealth(subscription, selectedStats);
  }

  /** Its state and secrets from the subscription; success rate, latency, backlog and last outcomes from its stats. */
  function showHealth(subscription, stats) {
    const list = $("health");
    list.replaceChildren();
    const add = (name, value, asBadge = false) => {
      list.append(element("dt", name));
      const dd = element("dd");
      if (asBadge) badge(dd.appendChild(element("span", undefined, "badge")), value);
      else dd.textContent = value;
      list.append(dd);
    };
    add("state", stateOf(subscription), true);
    if (subscription.disabledAt)
      add(
        "disabled",
        `${when(subscription.disabledAt)}${subscription.disabledReason ? ` — ${subscription.disabledReason}` : ""}`,
      );
    if (stats) {
      const { window: recent, backlog, lastSuccessAt, lastFailure, failingSince } = stats;
      const { latencyMs } = recent;
      add(
        `success (${recent.hours} h)`,
        recent.successRate === null
          ? "no attempts"
          : `${percent(recent.successRate)} of ${plural(recent.attempts, "attempt")}`,
      );
      if (latencyMs) add("latency", `p50 ${latencyMs.p50} ms · p95 ${latencyMs.p95} ms · max ${latencyMs.max} ms`);
      add("backlog", `${backlog} waiting`);
      add("last success", lastSuccessAt ? when(lastSuccessAt) : "never");
      if (lastFailure) add("last failure", `${answerOf(lastFailure)} · ${when(lastFailure.at)}`);
      if (failingSince) add("failing since", when(failingSince));
    }
    add("signature", subscription.signature === "ed25519" ? "Ed25519 and HMAC" : "HMAC");
    if (subscription.publicKey) add("public key", subscription.publicKey);
    add("secret rotated", subscription.rotatedAt ? when(subscription.rotatedAt) : "never");
    if (subscription.previousSecretUntil) add("old secret signs until", when(subscription.previousSecretUntil));
    add("created", when(subscription.createdAt));
  }

  async function readStats(subscriptionId) {
    return offers("stats") ? (await call("GET", `/webhooks/${subscriptionId}/stats`)).data : null;
  }

  // --- deliveries -----------------------------------------------------------------------------

  /** The newest deliveries, in one request: the API lists them newest first with `order=desc`. */
  async function readRecentDeliveries(subscriptionId, status) {
    const query = new URLSearchParams({ order: "desc", limit: String(RECENT) });
    if (status) query.set("status", status);
    const { data, next } = await call("GET", `/webhooks/${subscriptionId}/deliveries?${query}`);
    return { deliveries: data, complete: !next };
  }

  async function loadDeliveries() {
    if (!selected) return [];
    const mine = generation;
    const [{ deliveries, complete }, stats] = await Promise.all([
      readRecentDeliveries(selected.id, $("status-filter").value),
      readStats(selected.id),
    ]);
    if (mine !== generation) return deliveries;
    const note = $("deliveries-note");
    note.hidden = complete && deliveries.length > 0;
    note.textContent =
      deliveries.length === 0
        ? "No deliveries yet."
        : `The newest ${deliveries.length} deliveries; older ones exist: filter by status to narrow.`;
    $("deliveries").replaceChildren(...deliveries.map(deliveryItem));
    selectedStats = stats;
    showHealth(selected, stats);
    return deliveries;
  }

  /** What the receiver answered: its status code, or why there was none. */
  function answerOf(attempt) {
    return attempt.statusCode === null || attempt.statusCode === undefined
      ? `no answer (${attempt.error || "error"})`
      : `HTTP ${attempt.statusCode}`;
  }

  function outcome(attempt) {
    return `${answerOf(attempt)} in ${attempt.durationMs} ms`;
  }

  function deliveryItem(delivery) {
    const item = $("delivery-item").content.cloneNode(true);
    const li = item.querySelector("li");
    li.dataset.deliveryId = String(delivery.id);
    badge(item.querySelector(".status"), delivery.status);
    item.querySelector(".event").textContent = `${delivery.event} · #${delivery.id}`;
    item.querySelector(".when").textContent = when(delivery.createdAt);
    const attempts = delivery.attempts || [];
    const last = attempts[attempts.length - 1];
    const pending = delivery.nextAttemptAt ? ` · next attempt ${when(delivery.nextAttemptAt)}` : "";
    item.querySelector(".last-attempt").textContent = last
      ? `${plural(attempts.length, "attempt")}, last: ${outcome(last)}${pending}`
      : `Not attempted yet${pending}`;
    item.querySelector(".attempts").replaceChildren(...attempts.map(attemptItem));
    item.querySelector(".body").textContent = JSON.stringify(delivery.payload, null, 2);
    const resend = item.querySelector(".resend");
    resend.addEventListener("click", () => busy(resend, () => redeliver(delivery)));
    return item;
  }

  function attemptItem(attempt) {
    const why = attempt.number ? `#${attempt.number} ${attempt.trigger} · ` : "";
    const paused = attempt.pausedUntil ? ` · endpoint paused until ${when(attempt.pausedUntil)} (Retry-After)` : "";
    const li = element("li", `${why}${when(attempt.attemptedAt)} — ${outcome(attempt)}${paused}`);
    const answer = attempt.responseBody ?? attempt.response;
    if (typeof answer === "string" && answer) li.append(element("pre", answer, "answer"));
    return li;
  }

  /** Re-reads the deliveries until `done(deliveries)` holds or WATCH_MS passed, so the result shows without a click. */
  async function watchDeliveries(done) {
    const mine = generation;
    const deadline = Date.now() + WATCH_MS;
    for (;;) {
      const deliveries = await loadDeliveries();
      if (mine !== generation || done(deliveries) || Date.now() > deadline) return;
      await new Promise((resolve) => setTimeout(resolve, WATCH_EVERY_MS));
    }
  }

  /**
   * Whether a delivery got a new attempt and its status caught up with it: it left `pending`, or
   * that attempt failed and the next waits for the retry schedule (nothing more to see soon).
   */
  function settled(delivery, attemptsBefore) {
    const attempts = delivery?.attempts ?? [];
    if (attempts.length <= attemptsBefore) return false;
    const { statusCode } = attempts[attempts.length - 1];
    return delivery.status !== "pending" || !(statusCode >= 200 && statusCode < 300);
  }

  async function redeliver(delivery) {
    const attemptsBefore = (delivery.attempts || []).length;
    await call("POST", `/webhooks/${selected.id}/deliveries/${delivery.id}/redeliver`);
    say(`Delivery #${delivery.id} is queued again.`);
    await watchDeliveries((list) =>
      settled(
        list.find((d) => d.id === delivery.id),
        attemptsBefore,
      ),
    );
  }

  // --- the subscription's actions -------------------------------------------------------------

  async function sendTest() {
    const known = new Set(Array.from($("deliveries").children, (li) => li.dataset.deliveryId));
    await call("POST", `/webhooks/${selected.id}/test`);
    say("A test event is on its way.");
    await watchDeliveries((list) => list.some((d) => !known.has(String(d.id)) && settled(d, 0)));
  }

  async function enable() {
    const { data } = await call("POST", `/webhooks/${selected.id}/enable`);
    say("The subscription is enabled again.");
    if (data && typeof data === "object" && data.id === selected.id) showSubscription(data);
    await loadSubscriptions();
  }

  async function rotate() {
    if (!window.confirm("Rotate this subscription's secret? Your endpoint must verify with the new one.")) return;
    const { data } = await call("POST", `/webhooks/${selected.id}/rotate`);
    $("new-key").textContent = data.key;
    $("new-secret").textContent = data.secret;
    $("secrets").hidden = false;
    say("");
    showSubscription({ ...data, key: undefined, secret: undefined });
  }

  function hideSecrets() {
    $("new-key").textContent = "";
    $("new-secret").textContent = "";
    $("secrets").hidden = true;
  }

  /** A datetime-local input's value (local time, to the second) for a date. */
  function localInputValue(date) {
    const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
    return local.toISOString().slice(0, 19);
  }

  function showRecovery(recovery) {
    const progress = $("recover-progress");
    progress.textContent = `Recovery #${recovery.id}: ${recovery.status}, ${recovery.queued} of ${recovery.examined} deliveries looked at queued again.`;
    progress.hidden = false;
  }

  async function recover() {
    const since = new Date($("recover-since").value);
    if (Number.isNaN(since.getTime())) return say("Choose the time to recover from.", "error");
    const subscriptionId = selected.id;
    const all = $("recover-all").checked;
    let { data: recovery } = await call("POST", `/webhooks/${subscriptionId}/recover`, {
      since: since.toISOString(),
      ...(all ? { all } : {}),
    });
    const mine = generation;
    showRecovery(recovery);
    // It runs in the background: follow it, then show what it queued.
    const deadline = Date.now() + WATCH_MS;
    while (recovery.status !== "done" && offers("recovery") && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, WATCH_EVERY_MS));
      ({ data: recovery } = await call("GET", `/webhooks/${subscriptionId}/recoveries/${recovery.id}`));
      if (mine !== generation) return;
      showRecovery(recovery);
    }
    await loadDeliveries();
  }

  document.addEventListener("DOMContentLoaded", () => {
    // Forms are never submitted (the page's CSP forbids it too): the key must not leave in a request of its own.
    $("sign-in").addEventListener("submit", (e) => {
      e.preventDefault();
      signIn(e);
    });
    $("sign-out").addEventListener("click", () => signOut());
    $("refresh").addEventListener("click", (e) =>
      busy(e.currentTarget, async () => {
        await loadSubscriptions();
        await loadDeliveries();
      }),
    );
    $("status-filter").addEventListener("change", () => busy(null, loadDeliveries));
    $("send-test").addEventListener("click", (e) => busy(e.currentTarget, sendTest));
    $("enable").addEventListener("click", (e) => busy(e.currentTarget, enable));
    $("rotate").addEventListener("click", (e) => busy(e.currentTarget, rotate));
    $("hide-secrets").addEventListener("click", hideSecrets);
    $("recover").addEventListener("submit", (e) => {
      e.preventDefault();
      busy(e.submitter, recover);
    });
  });
})();
