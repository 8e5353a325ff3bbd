// panewise web's service worker: shows a Web Push (the payload the browser decrypted: the
// session, the tool and a short summary, as text only) and, on a tap, focuses or opens the
// inbox. It caches nothing: the page and the API are never served from a cache.
"use strict";

function text(value, max) {
  return typeof value === "string" ? value.slice(0, max) : "";
}

self.addEventListener("push", (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch (_) {
    data = {};
  }
  const name = text(data.name, 60) || text(data.session, 60) || "a session";
  const host = text(data.host, 60);
  const where = host && host !== "local" ? ` on ${host}` : "";
  const title = data.event === "done"
    ? `panewise: ${name}${where} is done`
    : `panewise: ${name}${where} needs input`;
  const tool = text(data.tool, 60);
  const summary = text(data.summary, 120);
  const body = tool ? `${tool}: ${summary}` : summary;
  event.waitUntil(self.registration.showNotification(title, {
    body,
    // A newer push for the same session replaces the older one.
    tag: `panewise:${text(data.host, 60)}:${text(data.session, 60)}`,
    data: { session: text(data.session, 60) },
  }));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const inbox = new URL("/#inbox", self.location.origin).href;
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    for (const client of windows) {
      if (new URL(client.url).origin === self.location.origin) {
        await client.focus();
        client.postMessage({ kind: "show-inbox" });
        return;
      }
    }
    await self.clients.openWindow(inbox);
  })());
});
