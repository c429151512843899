// @ts-check
// The service worker (served at /sw.js, scope: the app): Web Push notices, and a page that
// says "you are offline" when Compass cannot be reached. scripts/generate bundles it (with
// notice.js) into compass_server/static/sw.js; docs/answering/push.md says what it does.
//
// - push: an ask's push is shown as a notification (its tag is the ask id: a reminder or an
//   update replaces it); an "ask_closed" push closes the notification of that tag.
// - notificationclick: a button answers (POST answer_url with the one-time token and the
//   option; nothing else identifies the person); if that did not work the ask opens, so the
//   person sees why. A click elsewhere on the notification opens the ask.
// - fetch: page loads go to the network; when it cannot be reached, the cached offline page
//   answers instead of the browser's error page. Nothing else is cached or intercepted.

import { afterTap, answerRequest, noticeOf, openUrl } from "./notice.js";

const worker = /** @type {ServiceWorkerGlobalScope} */ (/** @type {unknown} */ (self));
const CACHE = "compass-offline-v1";
const OFFLINE = ["offline.html", "app.css", "icons/icon-192.png"];

/** @param {string} path */
function here(path) {
  return new URL(path, worker.registration.scope).href;
}

worker.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(OFFLINE.map(here)))
      .then(() => worker.skipWaiting()),
  );
});

worker.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((name) => name !== CACHE).map((name) => caches.delete(name))))
      .then(() => worker.clients.claim()),
  );
});

worker.addEventListener("fetch", (event) => {
  if (event.request.mode !== "navigate") return; // the network, untouched
  event.respondWith(
    fetch(event.request).catch(async () => (await caches.match(here("offline.html"))) ?? Response.error()),
  );
});

worker.addEventListener("push", (event) => {
  /** @type {unknown} */
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
      }),
    );
  }
});

worker.addEventListener("notificationclick", (event) => {
  const notification = event.notification;
  const data = /** @type {import("./notice.js").NoticeData | undefined} */ (notification.data);
  notification.close();
  event.waitUntil(event.action && data ? answer(data, event.action) : open(data));
});

/**
 * A button: answer with its option; open the ask when that did not work.
 * @param {import("./notice.js").NoticeData} data
 * @param {string} optionId
 */
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

/**
 * Show the ask: in a window of the app already open (focused), else in a new one.
 * @param {import("./notice.js").NoticeData | undefined} data
 */
async function open(data) {
  const target = openUrl(data, worker.registration.scope);
  const windows = await worker.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const client of windows) {
    if (client.url.startsWith(worker.registration.scope)) {
      try {
        await client.focus(); // allowed while a click on the notification is being handled
      } catch {
        // not from a person's click: the window is still shown the ask
      }
      await client.navigate(target);
      return;
    }
  }
  await worker.clients.openWindow(target);
}
