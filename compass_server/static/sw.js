// Generated from ui/src by scripts/generate (esbuild). DO NOT EDIT.
(() => {
  // ui/src/notice.js
  var ICON = "icons/icon-192.png";
  function isObject(value) {
    return typeof value === "object" && value !== null && !Array.isArray(value);
  }
  function text(doc, key) {
    const value = doc[key];
    return typeof value === "string" ? value : null;
  }
  function noticeOf(payload) {
    if (!isObject(payload)) return { kind: "unknown" };
    const tag = text(payload, "tag");
    if (!tag) return { kind: "unknown" };
    if (payload.type === "ask_closed") {
      return { kind: "closed", tag, status: text(payload, "status") ?? "", by: text(payload, "by") ?? "" };
    }
    if (payload.type !== "ask") return { kind: "unknown" };
    const askId = text(payload, "ask_id");
    const title = text(payload, "title");
    const url = text(payload, "url");
    if (!askId || title === null || !url) return { kind: "unknown" };
    const actions = [];
    const offered = payload.actions;
    if (Array.isArray(offered)) {
      for (const item of offered) {
        if (!isObject(item)) continue;
        const action = text(item, "action");
        const label = text(item, "title");
        if (action && label !== null) actions.push({ action, title: label });
      }
    }
    const answerUrl = text(payload, "answer_url") ?? "";
    const answerToken = text(payload, "answer_token") ?? "";
    return {
      kind: "ask",
      title,
      options: {
        tag,
        body: text(payload, "body") ?? "",
        // Buttons only when a tap can answer: without a token they would do nothing.
        actions: answerUrl && answerToken ? actions.slice(0, 2) : [],
        data: { ask_id: askId, url, answer_url: answerUrl, answer_token: answerToken },
        icon: ICON,
        renotify: true
        // a reminder (the same tag) alerts again
      }
    };
  }
  function answerRequest(data, optionId) {
    return {
      url: data.answer_url,
      init: {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ answer_token: data.answer_token, option_id: optionId }),
        credentials: "omit",
        cache: "no-store"
      }
    };
  }
  function afterTap(status) {
    return status === 200 || status === 409 ? "done" : "open";
  }
  function openUrl(data, scope) {
    const url = data?.url ?? "";
    return url.startsWith(scope) ? url : scope;
  }

  // ui/src/sw.js
  var worker = (
    /** @type {ServiceWorkerGlobalScope} */
    /** @type {unknown} */
    self
  );
  var CACHE = "compass-offline-v1";
  var OFFLINE = ["offline.html", "app.css", "icons/icon-192.png"];
  function here(path) {
    return new URL(path, worker.registration.scope).href;
  }
  worker.addEventListener("install", (event) => {
    event.waitUntil(
      caches.open(CACHE).then((cache) => cache.addAll(OFFLINE.map(here))).then(() => worker.skipWaiting())
    );
  });
  worker.addEventListener("activate", (event) => {
    event.waitUntil(
      caches.keys().then((names) => Promise.all(names.filter((name) => name !== CACHE).map((name) => caches.delete(name)))).then(() => worker.clients.claim())
    );
  });
  worker.addEventListener("fetch", (event) => {
    if (event.request.mode !== "navigate") return;
    event.respondWith(
      fetch(event.request).catch(async () => await caches.match(here("offline.html")) ?? Response.error())
    );
  });
  worker.addEventListener("push", (event) => {
    let payload = null;
    try {
      payload = event.data?.json() ?? null;
    } catch {
      payload = null;
    }
    const notice = noticeOf(payload);
    if (notice.kind === "ask") {
      event.waitUntil(worker.registration.showNotification(notice.title, notice.options));
    } else if (notice.kind === "closed") {
      event.waitUntil(
        worker.registration.getNotifications({ tag: notice.tag }).then((shown) => {
          for (const notification of shown) notification.close();
        })
      );
    }
  });
  worker.addEventListener("notificationclick", (event) => {
    const notification = event.notification;
    const data = (
      /** @type {import("./notice.js").NoticeData | undefined} */
      notification.data
    );
    notification.close();
    event.waitUntil(event.action && data ? answer(data, event.action) : open(data));
  });
  async function answer(data, optionId) {
    const { url, init } = answerRequest(data, optionId);
    let status = 0;
    try {
      status = (await fetch(url, init)).status;
    } catch {
      status = 0;
    }
    if (afterTap(status) === "open") await open(data);
  }
  async function open(data) {
    const target = openUrl(data, worker.registration.scope);
    const windows = await worker.clients.matchAll({ type: "window", includeUncontrolled: true });
    for (const client of windows) {
      if (client.url.startsWith(worker.registration.scope)) {
        try {
          await client.focus();
        } catch {
        }
        await client.navigate(target);
        return;
      }
    }
    await worker.clients.openWindow(target);
  }
})();
