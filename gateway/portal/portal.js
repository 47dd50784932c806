/*
 * The subscriber portal: plain browser JavaScript, no build step, no library. It calls only the
 * public API (same origin, /api/v1) with a portal session (the sign-in link's one-time token, read
 * from the URL fragment and removed from the address bar at once, exchanged for a session token)
 * or, where the server allows it, the key the user typed. Either lives in one variable of this
 * closure: never in storage, cookies or the URL.
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
    disable: "POST /api/v1/webhooks/{id}/disable",
    edit: "PATCH /api/v1/webhooks/{id}",
    catalogue: "GET /api/v1/webhooks/event_types",
  };
  const SVG = "http://www.w3.org/2000/svg";
  const STATUSES = new Set(["pending", "succeeded", "failed", "refused", "cancelled", "active", "disabled"]);

  const $ = (id) => document.getElementById(id);

  /** The Bearer credential: a portal session token, or a typed API key. */
  let apiKey = null;
  /** The portal session's id (to revoke it on sign-out); null when signed in with a key. */
  let sessionId = null;
  let catalogue = [];
  let shownDelivery = null;
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

  async function call(method, path, body, credential = apiKey) {
    const headers = { Authorization: `Bearer ${credential}`, Accept: "application/json, application/problem+json" };
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

  const pad = (n, width = 2) => String(Math.abs(n)).padStart(width, "0");

  /** ISO 8601 in the viewer's zone, offset shown: 2026-05-01T14:03:07+02:00. */
  function when(iso) {
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return String(iso);
    const offset = -d.getTimezoneOffset();
    const zone = `${offset < 0 ? "-" : "+"}${pad(Math.trunc(offset / 60))}:${pad(offset % 60)}`;
    return (
      `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}` +
      `T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${zone}`
    );
  }

  const plural = (count, noun, nouns = `${noun}s`) => `${count} ${count === 1 ? noun : nouns}`;
  const percent = (ratio) => `${(ratio * 100).toFixed(1).replace(/\.0$/, "")} %`;

  /** Runs an action with its button disabled; problems are shown, a refused key signs out. */
  async function busy(button, action) {
    if (button) button.disabled = true;
    try {
      await action();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401)
        return signOut(
          sessionId ? "Your session has ended: open a new sign-in link." : "This API key was refused: sign in again.",
        );
      say(err instanceof Error ? err.message : String(err), "error");
    } finally {
      if (button) button.disabled = false;
    }
  }

  // --- signing in and out ---------------------------------------------------------------------

  const keySignInAllowed = () => document.documentElement.dataset.keySignIn !== "off";

  async function enter(button) {
    generation += 1;
    await busy(button, async () => {
      await Promise.all([readOfferedOperations(), loadSubscriptions()]);
      if (!apiKey) return;
      await loadCatalogue();
      say("");
      $("sign-in").hidden = true;
      $("sign-in-help").hidden = true;
      $("workspace").hidden = false;
      $("sign-out").hidden = false;
    });
    // Refused for another reason than the credential (no webhooks scope, unreachable): keep nothing.
    if ($("workspace").hidden) {
      apiKey = null;
      sessionId = null;
    }
  }

  async function signIn(event) {
    const input = $("api-key");
    const key = input.value.trim();
    if (!key) return;
    apiKey = key;
    // Out of the DOM as soon as it is in memory.
    input.value = "";
    $("who").textContent = "signed in with an API key";
    await enter(event.submitter);
  }

  /** A sign-in link: `#link=<one-time token>`, taken out of the address bar before anything else. */
  async function signInWithLink() {
    const token = new URLSearchParams(location.hash.slice(1)).get("link");
    if (!token) return;
    history.replaceState(null, "", location.pathname + location.search);
    try {
      const { data } = await call("POST", "/portal_sessions/exchange", undefined, token);
      apiKey = data.token;
      sessionId = data.id;
      $("who").textContent = `${data.client.name} · session until ${when(data.expiresAt)}`;
    } catch (err) {
      say(
        err instanceof ApiError && err.status === 401
          ? "This sign-in link was already used or has expired: ask your application for a new one."
          : err.message,
        "error",
      );
      return;
    }
    await enter(null);
  }

  function signOut(reason) {
    // A session is revoked on the server too; a failure changes nothing here (it expires anyway).
    if (sessionId !== null) call("DELETE", `/portal_sessions/${sessionId}`).catch(() => {});
    apiKey = null;
    sessionId = null;
    selected = null;
    generation += 1;
    for (const id of ["subscriptions", "deliveries", "health", "charts"]) $(id).replaceChildren();
    hideSecrets();
    closeDetail();
    $("who").textContent = "";
    $("workspace").hidden = true;
    $("subscription").hidden = true;
    $("log-section").hidden = true;
    $("sign-out").hidden = true;
    $("sign-in").hidden = !keySignInAllowed();
    $("sign-in-help").hidden = false;
    say(typeof reason === "string" ? reason : "", typeof reason === "string" ? "error" : "info");
  }

  // --- the event catalogue and creating a subscription ----------------------------------------

  async function loadCatalogue() {
    if (!offers("catalogue")) return;
    catalogue = (await call("GET", "/webhooks/event_types")).data;
    const select = $("create-event");
    select.replaceChildren(...catalogue.map((t) => option(t.event, t.event)));
    showEventType();
  }

  function option(value, text) {
    const node = element("option", text);
    node.value = value;
    return node;
  }

  function showEventType() {
    const type = catalogue.find((t) => t.event === $("create-event").value);
    $("create-event-description").textContent = type ? type.description : "";
    $("create-event-example").textContent = type ? JSON.stringify(type.example, null, 2) : "";
    $("create-event-schema").textContent = type ? JSON.stringify(type.schema, null, 2) : "";
  }

  function toggleCreate(open) {
    $("create").hidden = !open;
    $("new-subscription").setAttribute("aria-expanded", String(open));
    if (open) $("create-event").focus();
  }

  async function create() {
    const ordering = $("create-ordering").value;
    const { data } = await call("PUT", "/webhooks", {
      event: $("create-event").value,
      url: $("create-url").value.trim(),
      signature: $("create-signature").value,
      // Sent only when chosen: a server without ordering refuses the field, and `none` is its default.
      ...(ordering === "per_entity" ? { ordering } : {}),
    });
    toggleCreate(false);
    $("create-url").value = "";
    showSecrets(data);
    say(`Subscription ${data.id} created.`);
    await loadSubscriptions();
    await select(data.id);
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
    $("recover-progress").hidden = true;
    closeDetail();
    for (const b of $("subscriptions").querySelectorAll("button"))
      b.setAttribute("aria-pressed", String(b.dataset.subscriptionId === String(id)));
    const mine = generation;
    const { data } = await call("GET", `/webhooks/${id}`);
    if (mine !== generation) return;
    selectedStats = null;
    showSubscription(data);
    fillEdit(data);
    const events = $("event-filter");
    events.replaceChildren(option("", "all"), option(data.event, data.event), option("webhook_test", "webhook_test"));
    await loadDeliveries();
  }

  function showSubscription(subscription) {
    selected = subscription;
    $("subscription").hidden = false;
    $("log-section").hidden = false;
    $("subscription-title").textContent = `${subscription.event} → ${subscription.url}`;
    $("subscription-url").textContent = subscription.url;
    const state = stateOf(subscription);
    $("send-test").hidden = !offers("test");
    $("enable").hidden = !(offers("enable") && state === "disabled");
    $("disable").hidden = !(offers("disable") && state === "active");
    $("edit").hidden = !offers("edit");
    $("recover").hidden = !offers("recover");
    if (!$("recover-since").value) $("recover-since").value = localInputValue(new Date(Date.now() - 24 * 3600_000));
    showHealth(subscription, selectedStats);
  }

  function fillEdit(subscription) {
    $("edit-url").value = subscription.url;
    $("edit-description").value = subscription.description ?? "";
    $("edit-rate-limit").value = subscription.rateLimit ?? "";
    $("edit-header-name").value = "";
    $("edit-header-value").value = "";
    const names = subscription.headerNames ?? [];
    $("edit-header-names").textContent = names.length ? `Custom headers: ${names.join(", ")} (values not shown)` : "";
  }

  async function edit() {
    const rate = $("edit-rate-limit").value.trim();
    const name = $("edit-header-name").value.trim();
    const { data } = await call("PATCH", `/webhooks/${selected.id}`, {
      url: $("edit-url").value.trim(),
      description: $("edit-description").value.trim() || null,
      rateLimit: rate ? Number(rate) : null,
      ...(name ? { headers: { [name]: $("edit-header-value").value } } : {}),
    });
    say("Saved.");
    showSubscription(data);
    fillEdit(data);
    await loadSubscriptions();
  }

  /** Its state from the subscription; success rate, latency, backlog and last outcomes from its stats. */
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
    if (subscription.ordering) add("ordering", subscription.ordering);
    add("secret rotated", subscription.rotatedAt ? when(subscription.rotatedAt) : "never");
    if (subscription.previousSecretUntil) add("old secret signs until", when(subscription.previousSecretUntil));
    add("created", when(subscription.createdAt));
    drawCharts(stats);
  }

  async function readStats(subscriptionId) {
    if (!offers("stats")) return null;
    const window = $("chart-window").value;
    return (await call("GET", `/webhooks/${subscriptionId}/stats?window=${window}`)).data;
  }

  // --- charts: inline SVG, built node by node ------------------------------------------------

  function svgNode(tag, attributes, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /** One small chart: bars (counts) or lines (several series), with its own title and a text summary. */
  function chart(title, points, series, { max, unit, bars = false }) {
    const width = 320;
    const height = 110;
    const top = 8;
    const bottom = 18;
    const plot = height - top - bottom;
    const step = width / Math.max(points.length, 1);
    const y = (v) => top + plot - (max > 0 ? (v / max) * plot : 0);
    const figure = element("figure", undefined, "chart");
    const svg = svgNode("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title });
    svg.append(svgNode("title", {}, title));
    svg.append(svgNode("line", { x1: 0, x2: width, y1: top + plot, y2: top + plot, class: "axis" }));
    for (const [index, s] of series.entries()) {
      if (bars) {
        points.forEach((p, i) => {
          const v = s.value(p) ?? 0;
          if (v > 0)
            svg.append(
              svgNode("rect", {
                x: i * step + 1,
                y: y(v),
                width: Math.max(step - 2, 1),
                height: top + plot - y(v),
                class: s.className,
              }),
            );
        });
        continue;
      }
      const path = points
        .map((p, i) => [i, s.value(p)])
        .filter(([, v]) => v !== null && v !== undefined)
        .map(([i, v], k) => `${k === 0 ? "M" : "L"}${(i * step + step / 2).toFixed(1)},${y(v).toFixed(1)}`)
        .join(" ");
      if (path) svg.append(svgNode("path", { d: path, class: `line ${s.className}`, "data-series": index }));
    }
    const first = points[0];
    const last = points[points.length - 1];
    if (first) svg.append(svgNode("text", { x: 0, y: height - 4, class: "tick" }, when(first.start).slice(5, 16)));
    if (last)
      svg.append(
        svgNode(
          "text",
          { x: width, y: height - 4, class: "tick", "text-anchor": "end" },
          when(last.start).slice(5, 16),
        ),
      );
    svg.append(svgNode("text", { x: 2, y: top + 8, class: "tick" }, `${max}${unit}`));
    figure.append(svg);
    const caption = element("figcaption", title);
    for (const s of series) caption.append(" ", element("span", s.label, `key ${s.className}`));
    figure.append(caption);
    return figure;
  }

  function drawCharts(stats) {
    const box = $("charts");
    box.replaceChildren();
    const points = stats?.series?.points;
    if (!points) return;
    const most = (f) => Math.max(0, ...points.map((p) => f(p) ?? 0));
    const latency = Math.max(
      1,
      most((p) => p.latencyMs?.p95),
    );
    box.append(
      chart("Attempts", points, [{ label: "attempts", className: "s1", value: (p) => p.attempts }], {
        max: Math.max(
          1,
          most((p) => p.attempts),
        ),
        unit: "",
        bars: true,
      }),
      chart(
        "Success rate",
        points,
        [{ label: "% 2xx", className: "s2", value: (p) => (p.successRate === null ? null : p.successRate * 100) }],
        {
          max: 100,
          unit: " %",
        },
      ),
      chart(
        "Latency",
        points,
        [
          { label: "p50", className: "s1", value: (p) => p.latencyMs?.p50 },
          { label: "p95", className: "s3", value: (p) => p.latencyMs?.p95 },
        ],
        { max: latency, unit: " ms" },
      ),
    );
  }

  // --- the log --------------------------------------------------------------------------------

  /** A datetime-local value as an RFC 3339 instant, or null when empty. */
  function instant(value) {
    const d = new Date(value);
    return value && !Number.isNaN(d.getTime()) ? d.toISOString() : null;
  }

  /** The newest deliveries matching the filters, in one request; a webhook-id is searched across every subscription. */
  async function readRecentDeliveries(subscriptionId) {
    const query = new URLSearchParams({ order: "desc", limit: String(RECENT) });
    const webhookId = $("search-webhook-id").value.trim();
    if (webhookId) {
      query.set("webhookId", webhookId);
      const { data, next } = await call("GET", `/webhooks/deliveries?${query}`);
      return { deliveries: data, complete: !next };
    }
    const filters = {
      status: $("status-filter").value,
      event: $("event-filter").value,
      since: instant($("since-filter").value),
      until: instant($("until-filter").value),
    };
    for (const [name, value] of Object.entries(filters)) if (value) query.set(name, value);
    const { data, next } = await call("GET", `/webhooks/${subscriptionId}/deliveries?${query}`);
    return { deliveries: data, complete: !next };
  }

  async function loadDeliveries() {
    if (!selected) return [];
    const mine = generation;
    const [{ deliveries, complete }, stats] = await Promise.all([
      readRecentDeliveries(selected.id),
      readStats(selected.id),
    ]);
    if (mine !== generation) return deliveries;
    $("deliveries-note").textContent =
      deliveries.length === 0
        ? "No deliveries match."
        : `${plural(deliveries.length, "delivery", "deliveries")}, newest first${complete ? "" : `; older ones exist: narrow the filters`}.`;
    $("deliveries").replaceChildren(...deliveries.map(deliveryRow));
    selectedStats = stats;
    showHealth(selected, stats);
    if (shownDelivery) {
      const again = deliveries.find((d) => d.id === shownDelivery.id);
      if (again) showDetail(again);
    }
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

  function deliveryRow(delivery) {
    const row = element("tr", undefined, "delivery");
    row.dataset.deliveryId = String(delivery.id);
    row.dataset.webhookId = delivery.webhookId;
    const attempts = delivery.attempts || [];
    const last = attempts[attempts.length - 1];
    const open = element("button", delivery.webhookId, "open link");
    open.type = "button";
    open.setAttribute("aria-label", `Open delivery ${delivery.webhookId}`);
    open.addEventListener("click", () => showDetail(delivery, true));
    const status = element("span", undefined, "badge status");
    badge(status, delivery.status);
    const cells = [
      element("td", when(delivery.createdAt), "when"),
      element("td"),
      element("td", delivery.event, "event"),
      element("td"),
      element("td", attempts.length, "count"),
      element(
        "td",
        last ? outcome(last) : delivery.nextAttemptAt ? `next ${when(delivery.nextAttemptAt)}` : "—",
        "last-attempt",
      ),
    ];
    cells[1].append(open);
    cells[3].append(status);
    row.append(...cells);
    return row;
  }

  /** The headers every delivery carries (webhooks.md, "Verifying a delivery"), secrets masked. */
  function headersSent(delivery, attempt) {
    const masked = "•••• (masked)";
    const headers = [
      ["Content-Type", "application/json"],
      ["webhook-id", delivery.webhookId],
      ["webhook-timestamp", attempt ? String(Math.floor(Date.parse(attempt.attemptedAt) / 1000)) : "at the attempt"],
      ["webhook-signature", `v1,${masked}`],
      ["X-WEBHOOK-EVENT", delivery.event],
      ["X-WEBHOOK-KEY", masked],
    ];
    for (const name of selected?.headerNames ?? []) headers.push([name, masked]);
    return headers;
  }

  function pairs(list, entries) {
    list.replaceChildren();
    for (const [name, value] of entries) list.append(element("dt", name), element("dd", value));
  }

  function showDetail(delivery, focus = false) {
    shownDelivery = delivery;
    const attempts = delivery.attempts || [];
    $("detail").hidden = false;
    $("detail-title").textContent = `Delivery ${delivery.webhookId}`;
    $("detail-webhook-id").textContent = delivery.webhookId;
    const pending = delivery.nextAttemptAt ? ` · next attempt ${when(delivery.nextAttemptAt)}` : "";
    $("detail-summary").textContent =
      `${delivery.event} · ${delivery.status} · created ${when(delivery.createdAt)} · ${plural(attempts.length, "attempt")}${pending}`;
    // The body is stored as the compact JSON it was sent as: serialised again, it is those bytes.
    $("detail-body").textContent = JSON.stringify(delivery.payload);
    pairs($("detail-headers"), headersSent(delivery, attempts[attempts.length - 1]));
    $("detail-attempts").replaceChildren(...attempts.map(attemptItem));
    if (focus) $("detail-title").focus();
  }

  function closeDetail() {
    shownDelivery = null;
    $("detail").hidden = true;
  }

  function attemptItem(attempt) {
    const why = attempt.number ? `#${attempt.number} ${attempt.trigger} · ` : "";
    const paused = attempt.pausedUntil ? ` · endpoint paused until ${when(attempt.pausedUntil)} (Retry-After)` : "";
    const li = element("li", undefined, "attempt");
    li.append(element("p", `${why}${when(attempt.attemptedAt)} — ${outcome(attempt)}${paused}`, "outcome"));
    if (attempt.responseHeaders) {
      const list = element("dl", undefined, "headers");
      pairs(list, Object.entries(attempt.responseHeaders));
      li.append(list);
    }
    const answer = attempt.responseBody;
    if (typeof answer === "string" && answer) {
      const pre = element("pre", answer, "answer code");
      pre.tabIndex = 0;
      li.append(pre);
      if (attempt.responseBodyTruncated) li.append(element("p", "(the answer was longer: its start is kept)", "hint"));
    }
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

  async function redeliver() {
    const delivery = shownDelivery;
    if (!delivery) return;
    const attemptsBefore = (delivery.attempts || []).length;
    await call("POST", `/webhooks/${selected.id}/deliveries/${delivery.id}/redeliver`);
    say(`Delivery ${delivery.webhookId} is queued again.`);
    await watchDeliveries((list) =>
      settled(
        list.find((d) => d.id === delivery.id),
        attemptsBefore,
      ),
    );
  }

  // --- the subscription's actions -------------------------------------------------------------

  async function sendTest() {
    const known = new Set(Array.from($("deliveries").children, (row) => row.dataset.deliveryId));
    await call("POST", `/webhooks/${selected.id}/test`);
    say("A test event is on its way.");
    await watchDeliveries((list) => list.some((d) => !known.has(String(d.id)) && settled(d, 0)));
  }

  async function setState(verb, message) {
    const { data } = await call("POST", `/webhooks/${selected.id}/${verb}`);
    say(message);
    if (data && typeof data === "object" && data.id === selected.id) showSubscription(data);
    await loadSubscriptions();
  }

  async function remove() {
    const name = `${selected.event} → ${selected.url}`;
    if (!window.confirm(`Delete the subscription ${name}? Nothing more is sent to it.`)) return;
    await call("DELETE", `/webhooks/${selected.id}`);
    say(`Subscription ${name} deleted.`);
    selected = null;
    $("subscription").hidden = true;
    $("log-section").hidden = true;
    await loadSubscriptions();
  }

  async function rotate() {
    if (!window.confirm("Rotate this subscription's secret? Your endpoint must verify with the new one.")) return;
    const { data } = await call("POST", `/webhooks/${selected.id}/rotate`);
    showSecrets(data);
    say("");
    showSubscription({ ...data, key: undefined, secret: undefined });
  }

  function showSecrets(data) {
    $("new-key").textContent = data.key;
    $("new-secret").textContent = data.secret;
    revealSecret(false);
    $("new-public-key").textContent = data.publicKey ?? "";
    $("new-public-key-label").hidden = !data.publicKey;
    $("new-public-key-value").hidden = !data.publicKey;
    $("secrets").hidden = false;
  }

  function revealSecret(shown) {
    $("new-secret").classList.toggle("masked", !shown);
    $("reveal-secret").setAttribute("aria-pressed", String(shown));
    $("reveal-secret").textContent = shown ? "Hide" : "Reveal";
  }

  function hideSecrets() {
    for (const id of ["new-key", "new-secret", "new-public-key"]) $(id).textContent = "";
    $("secrets").hidden = true;
  }

  async function copy(button) {
    const text = $(button.dataset.copy).textContent;
    try {
      await navigator.clipboard.writeText(text);
      say("Copied.");
    } catch {
      say("The browser refused to copy: select the text instead.", "error");
    }
  }

  /** A datetime-local input's value (local time, to the second) for a date. */
  function localInputValue(date) {
    const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
    return local.toISOString().slice(0, 19);
  }

  function showRecovery(recovery) {
    const progress = $("recover-progress");
    progress.textContent = `Recovery #${recovery.id}: ${recovery.status} — ${plural(recovery.examined, "delivery", "deliveries")} examined, ${recovery.queued} queued again.`;
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

  /** A form that is never submitted (the page's CSP forbids it too): its handler runs instead. */
  function onSubmit(id, action) {
    $(id).addEventListener("submit", (e) => {
      e.preventDefault();
      busy(e.submitter, action);
    });
  }

  const onClick = (id, action) => $(id).addEventListener("click", (e) => busy(e.currentTarget, action));

  document.addEventListener("DOMContentLoaded", () => {
    $("sign-in").hidden = !keySignInAllowed();
    $("sign-in").addEventListener("submit", (e) => {
      e.preventDefault();
      signIn(e);
    });
    $("sign-out").addEventListener("click", () => signOut());
    onClick("refresh", async () => {
      await loadSubscriptions();
      await loadDeliveries();
    });
    $("new-subscription").addEventListener("click", () => toggleCreate($("create").hidden));
    $("cancel-create").addEventListener("click", () => toggleCreate(false));
    $("create-event").addEventListener("change", showEventType);
    onSubmit("create", create);
    onSubmit("edit", edit);
    onSubmit("log-filters", loadDeliveries);
    onSubmit("recover", recover);
    $("status-filter").addEventListener("change", () => busy(null, loadDeliveries));
    $("chart-window").addEventListener("change", () => busy(null, loadDeliveries));
    onClick("send-test", sendTest);
    onClick("enable", () => setState("enable", "The subscription is enabled."));
    onClick("disable", () => setState("disable", "The subscription is paused: nothing is sent until you enable it."));
    onClick("rotate", rotate);
    onClick("delete", remove);
    onClick("resend", redeliver);
    $("close-detail").addEventListener("click", closeDetail);
    $("hide-secrets").addEventListener("click", hideSecrets);
    $("reveal-secret").addEventListener("click", () =>
      revealSecret($("reveal-secret").getAttribute("aria-pressed") !== "true"),
    );
    for (const button of document.querySelectorAll("button.copy")) button.addEventListener("click", () => copy(button));
    $("detail-title").tabIndex = -1;
    // A link opened in a tab that shows the page already changes only the fragment.
    window.addEventListener("hashchange", signInWithLink);
    signInWithLink();
  });
})();
