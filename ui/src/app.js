// @ts-check
// The Compass page: sign in with a token, pick a channel, watch its messages live, answer asks.

import { ChannelView } from "./channel.js";
import { receiptWaitFrom } from "./delivery.js";
import { Devices, registerServiceWorker } from "./devices.js";
import { EmailAsks } from "./emailasks.js";
import { byId as $, h, sentence, timeNode, untrusted } from "./dom.js";
import {
  askHref,
  channelHref,
  countByChannel,
  defaultChannel,
  firstQuestion,
  moreQuestions,
  parseRoute,
  signInCode,
  signInRefusal,
  switchQuestion,
  withoutToken,
} from "./page.js";
import { RpcError, comms, unary } from "./rpc.js";

/**
 * @typedef {import("./page.js").Channel} Channel
 * @typedef {import("./page.js").PendingAsk} PendingAsk
 */

const TOKEN_KEY = "compass.token"; // a pasted token: this tab only (sessionStorage)
// A session from a sign-in link: this device, every tab (localStorage), until sign-out or
// `compass admin revoke-sessions`.
const SESSION_KEY = "compass.session";
const LAST_CHANNEL_KEY = "compass.lastChannel"; // an id, not a secret: kept across tabs
const INBOX_POLL_MS = 5_000; // the inbox re-reads at least this often (at once on changes the open channel shows)
const INBOX_MAX = 500; // asks read into the inbox at most (pages of 100)

// ---------------------------------------------------------------------------------------
// The page: sign-in, channel list, routing (#/channel/<id>), sign-out.

/**
 * @type {{
 *   token: string | null,
 *   me: {accountId?: string, name?: string} | null,
 *   channels: Channel[],
 *   view: ChannelView | null,
 *   devices: Devices | null,
 *   email: EmailAsks | null,
 *   inbox: {asks: PendingAsk[], known: Set<string> | null,
 *     timer: ReturnType<typeof setInterval> | undefined, running: boolean, again: boolean},
 * }}
 */
const app = {
  token: null,
  me: null,
  channels: [],
  view: null,
  devices: null,
  email: null,
  inbox: { asks: [], known: null, timer: undefined, running: false, again: false },
};

/** @param {string} [message] */
function showSignin(message = "") {
  app.token = null;
  app.me = null;
  app.view?.stop();
  app.view = null;
  app.devices?.stop();
  app.devices = null;
  app.email?.stop();
  app.email = null;
  stopInbox();
  $("app-view").hidden = true;
  $("sign-out").hidden = true;
  $("session-status").textContent = "";
  $("signin-view").hidden = false;
  const error = $("signin-error");
  error.textContent = message;
  error.hidden = !message;
  $("token-input").focus();
}

/**
 * @param {string} token
 * @param {{fromForm: boolean}} how
 */
async function enter(token, { fromForm }) {
  let listed;
  try {
    listed = await unary(comms(token).listChannels({}));
  } catch (error) {
    if (!(error instanceof RpcError)) throw error;
    const refusal = signInRefusal(error.code, error.message, fromForm, error.fromServer);
    if (refusal.forget) forgetToken(token);
    showSignin(refusal.text);
    return false;
  }
  if (localStorage.getItem(SESSION_KEY) !== token) sessionStorage.setItem(TOKEN_KEY, token);
  app.token = token;
  app.channels = listed.channels;
  $("signin-view").hidden = true;
  $("app-view").hidden = false;
  $("sign-out").hidden = false;
  $("session-status").textContent = "Signed in";
  renderChannels();
  route();
  startInbox();
  showMe(token);
  app.devices?.stop();
  app.devices = new Devices({ token });
  app.devices.start();
  app.email?.stop();
  app.email = new EmailAsks({ token });
  app.email.start();
  return true;
}

/**
 * "Signed in as <name>" (GetMe); the plain "Signed in" stays if that call fails.
 * @param {string} token
 */
async function showMe(token) {
  let me;
  try {
    me = await unary(comms(token).getMe({}));
  } catch (error) {
    if (!(error instanceof RpcError)) throw error;
    return;
  }
  app.me = me;
  if (app.token !== token) return;
  const status = $("session-status");
  status.replaceChildren("Signed in as ", untrusted("bdi", { class: "me" }, me.name || me.accountId || "you"));
}

// ---------------------------------------------------------------------------------------
// "Waiting on you": the pending asks of every channel of this person (ListPendingAsks),
// re-read on every change the open channel shows and at least every INBOX_POLL_MS; counts
// per channel, in the tab title, and a browser notification for each new one (with the
// person's permission).

function startInbox() {
  stopInbox();
  app.inbox.known = null;
  refreshInbox();
  app.inbox.timer = setInterval(refreshInbox, INBOX_POLL_MS);
  setupNotifications();
}

function stopInbox() {
  clearInterval(app.inbox.timer);
  app.inbox.timer = undefined;
  app.inbox.asks = [];
  $("inbox-list").replaceChildren();
  $("inbox-count").hidden = true;
  document.title = "Compass";
}

async function refreshInbox() {
  const token = app.token;
  if (!token) return;
  if (app.inbox.running) {
    app.inbox.again = true;
    return;
  }
  app.inbox.running = true;
  try {
    /** @type {PendingAsk[]} */
    const asks = [];
    const client = comms(token);
    let pageToken = "";
    do {
      const page = await unary(client.listPendingAsks({ pageSize: 100, pageToken }));
      asks.push(...page.asks);
      pageToken = page.nextPageToken;
    } while (pageToken && asks.length < INBOX_MAX);
    if (app.token !== token) return;
    app.inbox.asks = asks;
    renderInbox();
    notifyNew(asks);
    // A fresh tab with several channels and nothing in the address opened nothing, even with
    // an ask waiting: now that the inbox is known, route() picks its channel.
    if (!app.view && parseRoute(location.hash).kind === "none") route();
  } catch (error) {
    if (!(error instanceof RpcError)) console.error(error);
    // The last list stays; the next refresh tries again.
  } finally {
    app.inbox.running = false;
    if (app.inbox.again) {
      app.inbox.again = false;
      refreshInbox();
    }
  }
}

/** @param {string | undefined} channelId */
function channelName(channelId) {
  return app.channels.find((c) => c.channelId === channelId)?.name || channelId;
}

function renderInbox() {
  const asks = app.inbox.asks;
  const list = $("inbox-list");
  list.replaceChildren(
    ...asks.map((item) => {
      const ask = item.ask;
      return h(
        "li",
        {},
        h(
          "a",
          { href: askHref(ask?.askId ?? ""), dataset: { askId: ask?.askId ?? "", channelId: item.channelId } },
          untrusted("bdi", { class: "inbox-question" }, firstQuestion(ask)),
          h(
            "span",
            { class: "inbox-meta" },
            untrusted("bdi", {}, item.authorName || item.authorAccountId || "An agent"),
            ` in # `,
            untrusted("bdi", {}, item.channelName || channelName(item.channelId) || ""),
            moreQuestions(ask?.questions.length ?? 0),
            " · ",
            timeNode(item.askedAt),
          ),
        ),
      );
    }),
  );
  $("inbox-empty").hidden = asks.length > 0;
  const count = $("inbox-count");
  count.textContent = String(asks.length);
  count.hidden = asks.length === 0;
  count.setAttribute("aria-label", `${asks.length} waiting`);
  document.title = asks.length ? `(${asks.length}) Compass` : "Compass";
  navigator.setAppBadge?.(asks.length).catch(() => {});
  const perChannel = countByChannel(asks);
  for (const link of $("channel-list").querySelectorAll("a")) {
    link.querySelector(".count")?.remove();
    const n = perChannel.get(link.dataset.channelId) ?? 0;
    if (n) link.append(h("span", { class: "count", "aria-label": `${n} waiting` }, String(n)));
  }
}

function setupNotifications() {
  const button = $("notify-enable");
  const note = $("notify-note");
  if (!("Notification" in window)) {
    button.hidden = true;
    return;
  }
  const show = () => {
    button.hidden = Notification.permission !== "default";
    note.hidden = Notification.permission !== "denied";
    note.textContent = "Notifications are blocked for this site in your browser's settings.";
  };
  button.onclick = async () => {
    await Notification.requestPermission();
    show();
  };
  show();
}

/** A notification for each ask that was not pending at the last refresh (none for those
 * already waiting when the page opened), unless this person is looking at its channel.
 * @param {PendingAsk[]} asks
 */
function notifyNew(asks) {
  const ids = new Set(asks.map((item) => item.ask?.askId ?? ""));
  const known = app.inbox.known;
  app.inbox.known = ids;
  if (known === null || !("Notification" in window) || Notification.permission !== "granted") return;
  for (const item of asks) {
    const askId = item.ask?.askId ?? "";
    if (known.has(askId)) continue;
    const watching = document.visibilityState === "visible" && app.view?.channel.channelId === item.channelId;
    if (watching) continue;
    const notification = new Notification(`${item.authorName || "An agent"} asks in # ${item.channelName || channelName(item.channelId)}`, {
      body: firstQuestion(item.ask),
      tag: askId,
    });
    notification.onclick = () => {
      window.focus();
      location.hash = askHref(askId);
      notification.close();
    };
  }
}

function renderChannels() {
  const list = $("channel-list");
  list.replaceChildren(
    ...app.channels.map((channel) =>
      h("li", {}, h(
          "a",
          { href: channelHref(channel.channelId), dataset: { channelId: channel.channelId } },
          h("span", { class: "channel-name" }, "# ", untrusted("bdi", {}, channel.name || channel.channelId)),
        )),
    ),
  );
  $("channels-empty").hidden = app.channels.length > 0;
  renderInbox(); // the per-channel counts
}

function route() {
  if (!app.token) return;
  const target = parseRoute(location.hash);
  if (target.kind === "ask") {
    openAsk(target.id, location.hash);
    return;
  }
  const match = target.kind === "channel";
  const wanted = target.id;
  let channel = app.channels.find((c) => c.channelId === wanted) ?? null;
  if (!match) {
    // No channel in the address: the one this person had open last, else the only one,
    // else the one with the ask waiting longest (once the inbox is read: renderInbox).
    channel = defaultChannel(app.channels, localStorage.getItem(LAST_CHANNEL_KEY), app.inbox.asks);
  }
  if (app.view && channel && app.view.channel.channelId === channel.channelId) return;
  showChannel(channel, { notFound: match ? wanted ?? target.raw : null });
}

/**
 * A deep link `#/ask/<id>`: the ask's channel, opened at that ask.
 * @param {string | null} askId null: an id whose escapes are broken (no such ask)
 * @param {string} hash
 */
async function openAsk(askId, hash) {
  const token = app.token;
  if (token === null) return;
  let found = null;
  if (askId) {
    try {
      found = await unary(comms(token).getAsk({ askId }));
    } catch (error) {
      if (!(error instanceof RpcError)) throw error;
      if (error.code === "unauthenticated") {
        showSignin("Your token is no longer accepted. Sign in again.");
        return;
      }
    }
  }
  if (app.token !== token || location.hash !== hash) return; // moved on meanwhile
  const channel = found ? app.channels.find((c) => c.channelId === found.channelId) ?? null : null;
  if (!channel) {
    showChannel(null, {});
    $("channel-title").textContent = "Ask not found";
    const error = $("channel-error");
    error.textContent = "This ask does not exist or is not in one of your channels.";
    error.hidden = false;
    return;
  }
  if (askId && app.view && app.view.channel.channelId === channel.channelId) {
    app.view.focus(askId);
    return;
  }
  showChannel(channel, { focusAsk: askId });
}

/**
 * @param {Channel | null} channel
 * @param {{notFound?: string | null, focusAsk?: string | null}} options
 */
function showChannel(channel, { notFound = null, focusAsk = null }) {
  app.view?.stop();
  app.view = null;
  for (const link of $("channel-list").querySelectorAll("a")) {
    if (channel && link.dataset.channelId === channel.channelId) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const status = $("live-status");
  status.textContent = "";
  delete status.dataset.state; // no live dot for a channel nobody watches
  const error = $("channel-error");
  error.hidden = true;
  if (!channel) {
    $("channel-title").textContent = app.channels.length ? "Pick a channel" : "No channels";
    $("messages").replaceChildren();
    if (notFound !== null) {
      // A link to a channel that does not exist, or is not one of this person's.
      $("channel-title").textContent = "Channel not found";
      error.replaceChildren(...sentence(["There is no channel “", { name: notFound }, "” among yours. Pick one from the list."]));
      error.hidden = false;
    }
    return;
  }
  localStorage.setItem(LAST_CHANNEL_KEY, channel.channelId);
  $("channel-title").replaceChildren("# ", untrusted("bdi", {}, channel.name || channel.channelId));
  if (app.token === null) return;
  app.view = new ChannelView({
    token: app.token,
    channel,
    onAuthLost: () => {
      $("session-status").textContent = "Token no longer accepted";
    },
    onChange: () => refreshInbox(),
    focusAsk,
    receiptWaitMs: receiptWaitFrom(location.search),
  });
  app.view.run();
}

/** Tokens are never taken from the address: drop one if someone put it there. */
function stripTokenFromUrl() {
  const clean = withoutToken(location.href);
  if (clean !== null) history.replaceState(null, "", clean);
  return clean !== null;
}

/** @param {string} token */
function forgetToken(token) {
  if (sessionStorage.getItem(TOKEN_KEY) === token) sessionStorage.removeItem(TOKEN_KEY);
  if (localStorage.getItem(SESSION_KEY) === token) localStorage.removeItem(SESSION_KEY);
}

/** `#/sign-in/<code>` (from `compass admin sign-in-link`): the code leaves the address at
 * once, is exchanged (by POST, once) for a session of this device, and the page opens.
 * @param {string} code
 */
async function signInWithLink(code) {
  history.replaceState(null, "", `${location.pathname}${location.search}`);
  const current = app.token || sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(SESSION_KEY);
  let response;
  try {
    response = await fetch("auth/sign-in", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ code }),
      credentials: "omit",
      cache: "no-store",
    });
  } catch {
    showSignin("The server could not be reached to use your sign-in link. Try the link again.");
    return;
  }
  let doc = null;
  try {
    doc = await response.json();
  } catch {
    doc = null;
  }
  if (!response.ok || !doc || typeof doc.token !== "string") {
    showSignin(doc && typeof doc.error === "string" ? doc.error : "This sign-in link could not be used.");
    return;
  }
  if (current && current !== doc.token) {
    // Signed in already: a link for another account must not replace the session unasked.
    const mine = await whoIs(current);
    if (mine && mine.accountId !== doc.accountId) {
      const incoming = String(doc.name || doc.accountId || "another account");
      const switching = await confirmSwitch(mine.name || mine.accountId || "you", incoming);
      if (!switching) {
        enter(current, { fromForm: false });
        return;
      }
    }
  }
  localStorage.setItem(SESSION_KEY, doc.token);
  sessionStorage.removeItem(TOKEN_KEY);
  enter(doc.token, { fromForm: false });
}

/**
 * Who `token` signs in (GetMe), or null when it no longer works or the server is away.
 * @param {string} token
 * @returns {Promise<{accountId?: string, name?: string} | null>}
 */
async function whoIs(token) {
  try {
    return await unary(comms(token).getMe({}));
  } catch (error) {
    if (!(error instanceof RpcError)) throw error;
    return null;
  }
}

/**
 * Ask whether to leave the account this browser is signed in as for the link's.
 * @param {string} current
 * @param {string} incoming
 * @returns {Promise<boolean>} true: switch
 */
function confirmSwitch(current, incoming) {
  const words = switchQuestion(current, incoming);
  $("signin-view").hidden = true;
  $("app-view").hidden = true;
  return new Promise((resolve) => {
    /** @param {boolean} choice */
    const done = (choice) => {
      panel.remove();
      resolve(choice);
    };
    const stay = h("button", { type: "button", class: "button button-primary" }, sentence(words.stayLabel));
    const go = h("button", { type: "button", class: "button" }, sentence(words.switchLabel));
    stay.addEventListener("click", () => done(false));
    go.addEventListener("click", () => done(true));
    const panel = h(
      "section",
      { class: "signin switch-account", id: "switch-account", role: "dialog", "aria-labelledby": "switch-title" },
      h("h1", { id: "switch-title" }, words.title),
      h("p", {}, sentence(words.text)),
      h("div", { class: "switch-actions" }, stay, go),
    );
    $("main").append(panel);
    stay.focus();
  });
}

/** "You are offline" while the browser says so (the requests fail meanwhile). */
function watchConnection() {
  const show = () => {
    $("offline-banner").hidden = navigator.onLine;
  };
  window.addEventListener("online", show);
  window.addEventListener("offline", show);
  show();
}

function init() {
  registerServiceWorker();
  watchConnection();
  const link = signInCode(location.hash);
  const stripped = link ? false : stripTokenFromUrl();
  $("signin-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = /** @type {HTMLInputElement} */ ($("token-input"));
    const token = input.value.trim();
    if (!token) {
      showSignin("Paste your access token first.");
      return;
    }
    const button = /** @type {HTMLButtonElement} */ ($("signin-submit"));
    button.disabled = true;
    enter(token, { fromForm: true }).then((entered) => {
      button.disabled = false;
      if (entered) input.value = ""; // a refused token stays, to be corrected
    });
  });
  $("sign-out").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    localStorage.removeItem(SESSION_KEY);
    $("messages").replaceChildren();
    $("channel-list").replaceChildren();
    showSignin();
  });
  window.addEventListener("hashchange", () => {
    // A sign-in link pasted into the address bar of an open page changes only the fragment.
    const code = signInCode(location.hash);
    if (code) signInWithLink(code);
    else route();
  });
  if (link) {
    signInWithLink(link);
    return;
  }
  const token = sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(SESSION_KEY);
  if (token) enter(token, { fromForm: false });
  else showSignin(stripped ? "Tokens in links are not accepted: paste yours below." : "");
}

init();
