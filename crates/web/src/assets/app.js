// The page of `panewise web`: plain DOM, no framework. Every piece of agent output is set
// with textContent (never innerHTML): the page's CSP forbids inline script, and nothing the
// agent says is ever parsed as markup.

const TOKEN_KEY = "panewise.token";
const STALE_MS = 30000;
const POLL_MS = 2000;

const $ = (id) => document.getElementById(id);
let token = localStorage.getItem(TOKEN_KEY);
let lastHeard = 0;
let live = false;
let openSession = null;
let inboxKey = "";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function headers(json) {
  const out = { Authorization: "Bearer " + token };
  if (json) out["Content-Type"] = "application/json";
  return out;
}

async function post(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: headers(true),
    body: JSON.stringify(body || {}),
    credentials: "omit",
    referrerPolicy: "no-referrer",
  });
  let data = {};
  try { data = await response.json(); } catch (_) { /* no body */ }
  if (response.status === 401) unpaired();
  return { ok: response.ok, status: response.status, data };
}

function say(text) { $("notice").textContent = text; }

function setStatus(text, bad) {
  $("status").textContent = text;
  $("status").className = bad ? "bad" : "";
  document.body.dataset.live = bad ? "no" : "yes";
  for (const button of document.querySelectorAll("button.action")) button.disabled = bad;
}

function unpaired() {
  token = null;
  localStorage.removeItem(TOKEN_KEY);
  $("pairing").hidden = false;
  for (const id of ["inbox-section", "sessions-section", "session-section"]) $(id).hidden = true;
  setStatus("not paired", true);
}

async function pair(code, device) {
  const response = await fetch("/api/pair", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ code, device }),
    credentials: "omit",
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    unpaired();
    say(data.error || "pairing failed");
    $("pairing").hidden = false;
    $("status").textContent = data.error || "pairing failed";
    return false;
  }
  token = data.token;
  localStorage.setItem(TOKEN_KEY, token);
  return true;
}

function deviceGuess() {
  const ua = navigator.userAgent;
  const what = /iPhone|iPad/.test(ua) ? "iPhone" : /Android/.test(ua) ? "Android" : /Mac/.test(ua) ? "Mac" : /Linux/.test(ua) ? "Linux" : "browser";
  return what + " browser";
}

function age(since) {
  if (!since) return "";
  const secs = Math.max(0, Math.round((Date.now() - since) / 1000));
  return secs < 60 ? secs + "s" : secs < 3600 ? Math.round(secs / 60) + "m" : Math.round(secs / 3600) + "h";
}

function actionButton(text, className, onClick) {
  const button = el("button", "action " + (className || ""), text);
  button.type = "button";
  button.disabled = !live;
  button.addEventListener("click", async () => {
    button.disabled = true;
    try { await onClick(); } finally { button.disabled = !live; }
    refresh();
  });
  return button;
}

function answered(result) {
  if (result.ok) { say(""); return; }
  if (result.status === 409) say("already answered: " + (result.data.error || ""));
  else say(result.data.error || "failed: HTTP " + result.status);
}

function inboxItem(item) {
  const card = el("li", "card");
  card.dataset.session = item.session;
  const wait = item.waiting_for;
  card.dataset.request = wait.id;
  card.append(el("div", "meta", [item.agent, item.host, item.name, age(item.since_ms)].filter(Boolean).join(" · ")));
  const base = "/api/sessions/" + encodeURIComponent(item.session);
  if (wait.kind === "approval") {
    card.append(el("div", "tool", wait.tool));
    card.append(el("pre", "argument", wait.argument));
    const message = el("input", "deny-message");
    message.placeholder = "message with a denial (optional)";
    message.setAttribute("aria-label", "message with a denial");
    const approve = (decision) => async () =>
      answered(await post(base + "/approve", { request: wait.id, decision, message: message.value }));
    const row = el("div", "row");
    row.append(
      actionButton("Allow once", "allow allow-once", approve("allow_once")),
      actionButton("Allow for session", "allow allow-session", approve("allow_for_session")),
      actionButton("Deny", "danger deny", approve("deny")),
    );
    card.append(row, message);
  } else if (wait.kind === "budget") {
    // Held at a spend cap: raised from a terminal (`panewise budget`), not from this page.
    card.append(el("pre", "question", wait.reason));
    card.append(el("div", "meta", "raise it with: panewise budget " + item.name + " --max-cost-usd N"));
  } else {
    for (const question of wait.questions || []) card.append(el("pre", "question", question));
    const text = el("input", "answer-text");
    text.placeholder = "answer";
    text.setAttribute("aria-label", "answer");
    const row = el("div", "row");
    row.append(actionButton("Answer", "allow answer", async () =>
      answered(await post(base + "/answer", { text: text.value }))));
    card.append(text, row);
  }
  return card;
}

function sessionRow(session) {
  const row = el("li");
  const button = el("button", "session");
  button.type = "button";
  button.dataset.session = session.id;
  const context = session.context_pct == null ? "" : session.context_pct + "%";
  const cost = session.cost_usd == null ? "" : "$" + session.cost_usd.toFixed(2);
  const tool = session.tool ? session.tool + (session.tool_arg ? " " + session.tool_arg : "") : "";
  button.append(el("span", "state", session.state), document.createTextNode(" " + session.name + " "),
    el("span", "meta", [session.host === "local" ? "" : session.host, session.provider, context, cost, tool].filter(Boolean).join(" · ")));
  button.addEventListener("click", () => openTranscript(session));
  row.append(button);
  return row;
}

async function getJson(path) {
  const response = await fetch(path, { headers: headers(false), credentials: "omit" });
  if (response.status === 401) { unpaired(); throw new Error("unpaired"); }
  if (!response.ok) throw new Error("HTTP " + response.status);
  return response.json();
}

async function refresh() {
  if (!token) return;
  try {
    const [inbox, sessions] = await Promise.all([getJson("/api/inbox"), getJson("/api/sessions")]);
    const reach = inbox.reach;
    if (reach === "live") lastHeard = Date.now();
    live = reach === "live";
    // A remote host that cannot be reached is said beside the live status, never hidden.
    const down = (inbox.hosts || []).filter((h) => h.host !== "local" && h.error).map((h) => h.host + " unreachable");
    setStatus((live ? "live" : "daemon " + reach + (inbox.error ? ": " + inbox.error : "")) + (down.length ? "; " + down.join("; ") : ""), !live || down.length > 0);
    // Rebuilt only when what it shows changed, so a button is never replaced under a finger.
    const key = JSON.stringify([live, inbox.items]);
    if (key !== inboxKey) {
      inboxKey = key;
      $("inbox").replaceChildren(...inbox.items.map(inboxItem));
    }
    $("inbox-count").textContent = "(" + inbox.items.length + ")";
    const sessionsKey = JSON.stringify([live, sessions.sessions]);
    if (sessionsKey !== $("sessions").dataset.key) {
      $("sessions").dataset.key = sessionsKey;
      $("sessions").replaceChildren(...sessions.sessions.map(sessionRow));
    }
    $("inbox-section").hidden = false;
    $("sessions-section").hidden = false;
  } catch (error) {
    if (!token) return;
    if (Date.now() - lastHeard > STALE_MS || !live) {
      live = false;
      setStatus("unreachable: " + error.message, true);
    }
  }
}

// The transcript: server-sent events read with fetch (EventSource cannot send the bearer
// header), resumed after a dropped connection with Last-Event-ID.
let stream = null;

function openTranscript(session) {
  if (stream) stream.abort();
  openSession = session.id;
  $("session-title").textContent = session.name + " (" + session.provider + ")";
  $("transcript").replaceChildren();
  $("session-section").hidden = false;
  follow(session.id, null);
}

async function follow(id, lastId) {
  const controller = new AbortController();
  stream = controller;
  const sent = headers(false);
  if (lastId !== null) sent["Last-Event-ID"] = String(lastId);
  let last = lastId;
  try {
    const response = await fetch("/api/sessions/" + encodeURIComponent(id) + "/transcript",
      { headers: sent, credentials: "omit", signal: controller.signal });
    if (!response.ok) throw new Error("HTTP " + response.status);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event = { event: "message", data: "", id: null };
        for (const line of block.split("\n")) {
          const colon = line.indexOf(":");
          if (colon <= 0) continue;
          const field = line.slice(0, colon);
          const text = line.slice(colon + 1).replace(/^ /, "");
          if (field === "data") event.data += text;
          else if (field === "event") event.event = text;
          else if (field === "id") event.id = text;
        }
        if (event.event === "line") {
          const data = JSON.parse(event.data);
          for (const line of data.lines) {
            const row = el("div", "line");
            row.dataset.index = data.index;
            row.append(el("span", "label", line.label), document.createTextNode(line.text));
            $("transcript").append(row);
          }
          last = data.index;
          $("transcript").dataset.last = String(last);
        } else if (event.event === "ended") {
          $("transcript").dataset.ended = "yes";
          return;
        }
      }
    }
  } catch (error) {
    if (controller.signal.aborted) return;
  }
  if (openSession === id && stream === controller) setTimeout(() => follow(id, last), 500);
}

function wire() {
  $("pair-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (await pair($("pair-code").value.trim(), $("pair-device").value || deviceGuess())) start();
  });
  $("new-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    answered(await post("/api/sessions", { prompt: $("new-prompt").value }));
    refresh();
  });
  $("prompt-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!openSession) return;
    answered(await post("/api/sessions/" + encodeURIComponent(openSession) + "/prompt", { text: $("prompt-text").value }));
    $("prompt-text").value = "";
  });
  $("interrupt").addEventListener("click", async () => openSession &&
    answered(await post("/api/sessions/" + encodeURIComponent(openSession) + "/interrupt", {})));
  $("stop").addEventListener("click", async () => openSession &&
    answered(await post("/api/sessions/" + encodeURIComponent(openSession) + "/stop", {})));
  $("close").addEventListener("click", () => {
    if (stream) stream.abort();
    openSession = null;
    $("session-section").hidden = true;
  });
}

// Web Push: the browser's push subscription, made with the server's VAPID key once the
// person allows notifications, is handed to the server for this device; a push is shown by
// /sw.js. A browser without a service worker or PushManager (or a page not in a secure
// context: http to anything but loopback) has no button.
function pushKey(text) {
  const raw = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

async function sendSubscription(method, body) {
  const response = await fetch("/api/push/subscription", {
    method,
    headers: headers(true),
    body: JSON.stringify(body),
    credentials: "omit",
    referrerPolicy: "no-referrer",
  });
  if (response.status === 401) unpaired();
  return response.ok;
}

async function pushState() {
  const button = $("push-button");
  if (!("serviceWorker" in navigator) || !("PushManager" in window) || !window.isSecureContext) return;
  const registration = await navigator.serviceWorker.register("/sw.js");
  const current = await registration.pushManager.getSubscription();
  button.hidden = false;
  button.textContent = current ? "Stop notifying this device" : "Notify this device";
  button.onclick = async () => {
    button.disabled = true;
    try {
      const now = await registration.pushManager.getSubscription();
      if (now) {
        await sendSubscription("DELETE", { endpoint: now.endpoint });
        await now.unsubscribe();
        say("");
      } else if ((await Notification.requestPermission()) === "granted") {
        const key = (await getJson("/api/push/key")).key;
        const made = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: pushKey(key) });
        say((await sendSubscription("POST", made.toJSON())) ? "" : "this server did not take the subscription");
      } else {
        say("notifications are not allowed for this page");
      }
    } catch (error) {
      say("notifications: " + error.message);
    } finally {
      button.disabled = false;
      pushState();
    }
  };
}

function start() {
  $("pairing").hidden = true;
  pushState().catch(() => { /* no push on this browser */ });
  if ("serviceWorker" in navigator) {
    // A tapped notification asks the page to show the inbox.
    navigator.serviceWorker.addEventListener("message", (event) => {
      if (event.data && event.data.kind === "show-inbox") {
        $("inbox-section").scrollIntoView();
        refresh();
      }
    });
  }
  refresh();
  setInterval(refresh, POLL_MS);
  // Said within 30 s even when every poll hangs rather than fails.
  setInterval(() => { if (Date.now() - lastHeard > STALE_MS) { live = false; setStatus("stale: nothing heard for 30 s", true); } }, 5000);
}

async function main() {
  wire();
  // The pairing code arrives in the fragment, which is never sent to a server; it is taken
  // out of the address and the history at once.
  const match = /^#pair=([0-9a-f]+)$/.exec(location.hash);
  if (match) {
    history.replaceState(null, "", location.pathname);
    if (!(await pair(match[1], deviceGuess()))) return;
  }
  if (!token) { unpaired(); return; }
  start();
}

main();
