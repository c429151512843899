// @ts-check
// The Compass page: sign in with a token, pick a channel, watch its messages live, answer asks.

import { AskForm, closedView, interruptedNote, isFinal, questionSignature } from "./ask.js";
import { RpcError, serverStream, unary } from "./connect.js";
import { h, reconcile, timeNode } from "./dom.js";
import {
  RETRY_FIRST_MS,
  askHref,
  channelHref,
  compareKeys,
  countByChannel,
  defaultChannel,
  firstQuestion,
  jittered,
  moreQuestions,
  nextDelay,
  orderKey,
  parseRoute,
  signInCode,
  signInRefusal,
  switchQuestion,
  stopsChannel,
  tickWait,
  toBigInt,
  withoutToken,
} from "./page.js";

/**
 * @typedef {import("./ask.js").Ask} Ask
 * @typedef {import("./ask.js").Answer} Answer
 * @typedef {import("./page.js").Message} Message
 * @typedef {import("./page.js").Block} Block
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

/**
 * The page's element with this id (index.html has them all: a missing one is a bug).
 * @param {string} id
 * @returns {HTMLElement}
 */
const $ = (id) => {
  const node = document.getElementById(id);
  if (!node) throw new Error(`index.html has no #${id}`);
  return node;
};

// ---------------------------------------------------------------------------------------
// One channel: a resumable WatchChannel and the messages it delivered.

class ChannelView {
  /**
   * @param {{token: string, channel: Channel, onAuthLost: () => void, onChange?: () => void,
   *   focusAsk?: string | null}} options
   */
  constructor({ token, channel, onAuthLost, onChange, focusAsk = null }) {
    this.token = token;
    this.channel = channel;
    this.onAuthLost = onAuthLost;
    this.onChange = onChange ?? (() => {});
    this.focusAsk = focusAsk; // an ask to show first (a deep link), else the first pending one
    this.revision = 0n; // highest revision seen: where a new watch resumes
    this.loaded = false; // the first ListMessages pages are all in
    /** @type {Map<string, Message>} */
    this.messages = new Map(); // messageId -> message
    /** @type {Map<string, HTMLElement>} */
    this.articles = new Map(); // messageId -> <article>
    /** @type {Map<string, AskForm>} */
    this.forms = new Map(); // askId -> AskForm (pending asks)
    /** @type {Map<string, {note: string, unsent: import("./ask.js").UnsentAnswer[]}>} */
    this.notes = new Map(); // askId -> {note, unsent} shown on its closed view
    this.controller = new AbortController();
    this.list = $("messages");
    this.status = $("live-status");
    this.error = $("channel-error");
    this.empty = h("p", { class: "muted empty" }, "Loading messages…");
    this.list.replaceChildren(this.empty);
    this.error.hidden = true;
  }

  stop() {
    this.controller.abort();
  }

  /**
   * @param {string} text
   * @param {string} state
   */
  setStatus(text, state) {
    this.status.textContent = text;
    this.status.dataset.state = state;
  }

  /** The channel as it is now (ListMessages, every page), then live changes (WatchChannel). */
  async run() {
    const signal = this.controller.signal;
    let delay = RETRY_FIRST_MS;
    this.setStatus("Loading…", "connecting");
    for (;;) {
      try {
        await this.load(signal);
        break;
      } catch (error) {
        if (signal.aborted) return;
        if (!this.recoverable(error)) return;
        await this.countdown(delay, signal, (s) => `Could not load; retrying in ${s} s…`);
        delay = nextDelay(delay);
      }
    }
    if (!this.messages.size) this.empty.textContent = "No messages yet.";
    this.loaded = true;
    this.showStart();
    await this.watch(signal);
  }

  /**
   * Waits `ms`, saying every second how long is left (`text(seconds)`).
   * @param {number} ms
   * @param {AbortSignal} signal
   * @param {(seconds: number) => string} text
   */
  async countdown(ms, signal, text) {
    const end = Date.now() + ms;
    while (!signal.aborted) {
      const left = end - Date.now();
      if (left <= 0) return;
      this.setStatus(text(Math.max(1, Math.ceil(left / 1000))), "reconnecting");
      await sleep(tickWait(left), signal);
    }
  }

  /** Once the channel is loaded: brings the linked ask, else the first pending question,
   * into view (on a phone the form is taller than the screen, and its end is not where to
   * start); with neither, the newest message. */
  showStart() {
    if (this.focusAsk) {
      const linked = [...this.list.querySelectorAll("[data-ask-id]")].find(
        (node) => node instanceof HTMLElement && node.dataset.askId === this.focusAsk,
      );
      if (linked) {
        scrollBelowHeader(withItsMessage(linked));
        linked.querySelector(/** @type {"input"} */ ("input, textarea"))?.focus({ preventScroll: true });
        return;
      }
      this.showError("The linked ask is not in this channel any more.");
    }
    const first = this.list.querySelector("form.ask-pending fieldset.question");
    if (first) scrollBelowHeader(withItsMessage(first));
    else this.list.lastElementChild?.scrollIntoView({ block: "end" });
  }

  /**
   * A deep link to an ask of this channel while it is open.
   * @param {string} askId
   */
  focus(askId) {
    this.focusAsk = askId;
    if (this.loaded) this.showStart();
  }

  /** @param {AbortSignal} signal */
  async load(signal) {
    let pageToken = "";
    do {
      const page = await unary(
        this.token,
        "ListMessages",
        { channelId: this.channel.channelId, pageToken },
        { signal },
      );
      for (const message of page.messages ?? []) this.apply(message);
      pageToken = page.nextPageToken ?? "";
    } while (pageToken);
  }

  /** Follows changes after the highest revision seen, resuming from there whenever the
   * stream ends or breaks (with backoff). */
  /** @param {AbortSignal} signal */
  async watch(signal) {
    let delay = RETRY_FIRST_MS;
    while (!signal.aborted) {
      this.setStatus("Connecting…", "connecting");
      try {
        await serverStream(
          this.token,
          "WatchChannel",
          { channelId: this.channel.channelId, afterRevision: this.revision.toString() },
          {
            signal,
            onOpen: () => {
              delay = RETRY_FIRST_MS;
            },
            onMessage: (response) => {
              if (response && response.message) this.apply(response.message);
              // Sent once the replay is done, then as a keepalive while the channel is quiet.
              if (response && response.caughtUp) this.setStatus("Live", "live");
            },
          },
        );
        // A clean end (the server is shutting down): resume from where we are.
      } catch (error) {
        if (signal.aborted) return;
        if (!this.recoverable(error)) return;
      }
      if (signal.aborted) return;
      const wait = jittered(delay, Math.random());
      await this.countdown(wait, signal, (s) => `Reconnecting in ${s} s…`);
      delay = nextDelay(delay);
    }
  }

  /**
   * Whether to retry after `error`; otherwise says why the channel cannot be shown.
   * @param {unknown} error
   */
  recoverable(error) {
    if (!(error instanceof RpcError)) {
      console.error(error);
      return true;
    }
    if (!stopsChannel(error.code)) return true;
    this.setStatus("Stopped", "stopped");
    if (error.code === "unauthenticated") this.onAuthLost();
    this.showError(`This channel cannot be shown: ${error.message}`);
    return false;
  }

  /** @param {string} text */
  showError(text) {
    this.error.textContent = text;
    this.error.hidden = false;
  }

  /**
   * Shows `message` (new, or a newer version of one shown: replaced by messageId).
   * @param {Message} message
   */
  apply(message) {
    const id = message.messageId;
    if (!id) return;
    const revision = toBigInt(message.revision);
    const known = this.messages.get(id);
    if (known && toBigInt(known.revision) > revision) return; // an older copy (a GetAsk race)
    if (revision > this.revision) this.revision = revision;
    this.messages.set(id, message);
    const shown = this.articles.get(id);
    const isNew = !shown;
    const article = shown ?? h("article", { class: "message", dataset: { messageId: id } });
    if (isNew) this.articles.set(id, article);
    reconcile(article, [
      h(
        "p",
        { class: "message-meta" },
        h("bdi", { class: "author" }, message.authorName || message.authorAccountId || "Someone"),
        " · ",
        timeNode(message.createdAt ?? ""),
      ),
      ...(message.blocks ?? []).map((block) => this.blockNode(block)),
    ]);
    if (isNew) this.place(article, message);
    if (this.loaded) this.onChange();
  }

  /**
   * @param {HTMLElement} article
   * @param {Message} message
   */
  place(article, message) {
    this.empty.remove();
    const nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 200;
    const key = orderKey(message);
    const after = [...this.messages.values()]
      .filter((other) => other.messageId !== message.messageId && compareKeys(orderKey(other), key) > 0)
      .sort((a, b) => compareKeys(orderKey(a), orderKey(b)))[0];
    this.list.insertBefore(article, after ? this.articles.get(after.messageId ?? "") ?? null : null);
    // While loading, nothing scrolls: `showStart` picks the place once all is in.
    if (this.loaded && nearBottom && !after) article.scrollIntoView({ block: "end" });
  }

  /** @param {Block} block */
  blockNode(block) {
    if (block.text) return h("div", { class: "text-block" }, block.text.text ?? "");
    if (block.ask) return this.askNode(block.ask);
    return h("p", { class: "muted" }, "(a block this page cannot show)");
  }

  /** @param {Ask} ask */
  askNode(ask) {
    const askId = ask.askId ?? "";
    const open = this.forms.get(askId);
    if (isFinal(ask)) {
      if (open) {
        this.forms.delete(askId);
        // Closed while this person was filling it in (not by their own answer or decline):
        // say so, and keep what they entered in view.
        if (!open.declined && open.hasDraft() && !open.matches(ask)) {
          this.notes.set(askId, { note: interruptedNote(ask), unsent: open.unsent() });
        }
      }
      return closedView(ask, this.notes.get(askId) ?? {});
    }
    if (open && open.signature === questionSignature(ask)) {
      open.update(ask);
      return open.node;
    }
    // New, or the agent changed its questions: a fresh form keeps what was entered per question.
    const form = new AskForm(ask, {
      submit: (id, answers) => this.respond(id, answers),
      decline: (id, reason) => this.decline(id, reason),
    });
    if (open) form.restore(open.draft());
    this.forms.set(askId, form);
    return form.node;
  }

  /**
   * @param {string} askId
   * @param {Answer[]} answers
   */
  async respond(askId, answers) {
    await this.closing(askId, unary(this.token, "RespondToAsk", { askId, answers }));
    await this.refreshAsk(askId);
  }

  /**
   * @param {string} askId
   * @param {string} reason
   */
  async decline(askId, reason) {
    await this.closing(askId, unary(this.token, "DeclineAsk", { askId, reason }));
    await this.refreshAsk(askId);
  }

  /** Awaits a call that closes the ask. Refused because the ask was closed meanwhile
   * (FAILED_PRECONDITION), the error carries the ask as stored (`closedAsk`), so the form can
   * say how it ended.
   * @param {string} askId
   * @param {Promise<unknown>} call
   */
  async closing(askId, call) {
    try {
      await call;
    } catch (error) {
      if (error instanceof RpcError && error.code === "failed_precondition") {
        error.closedAsk = (await this.fetchAsk(askId))?.ask ?? null;
      }
      throw error;
    }
  }

  /**
   * GetAsk, or null when it fails.
   * @param {string} askId
   * @returns {Promise<{ask?: Ask, messageId?: string, channelId?: string} | null>}
   */
  async fetchAsk(askId) {
    try {
      return await unary(this.token, "GetAsk", { askId });
    } catch (error) {
      if (!(error instanceof RpcError)) throw error;
      return null;
    }
  }

  /** The watch will deliver the ask's new state too; fetching it now shows it at once even
   * while the watch is reconnecting.
   * @param {string} askId
   */
  async refreshAsk(askId) {
    const got = await this.fetchAsk(askId);
    const message = got ? this.messages.get(got.messageId ?? "") : null;
    if (!got || !message || !got.ask) return;
    const ask = got.ask;
    const blocks = (message.blocks ?? []).map((block) =>
      block.ask && block.ask.askId === askId ? { ask } : block,
    );
    this.apply({ ...message, blocks });
  }
}

/**
 * Where to scroll to show `node` (an ask, or its first question): the start of its message
 * (who asked, and the text before the ask), when that fits in the upper half of the window
 * above it; else `node` itself. (Scrolling to the question put the asker's name and lead-in
 * above the fold.)
 * @param {Element} node
 * @returns {Element}
 */
function withItsMessage(node) {
  const message = node.closest("article");
  if (!message) return node;
  const above = node.getBoundingClientRect().top - message.getBoundingClientRect().top;
  return above < window.innerHeight / 2 ? message : node;
}

/**
 * Scrolls `node` to just below the sticky channel header, which would otherwise cover it.
 * @param {Element} node
 */
function scrollBelowHeader(node) {
  const head = document.querySelector(".channel-head");
  const covered = head ? head.getBoundingClientRect().height + 8 : 0;
  window.scrollTo({ top: Math.max(0, window.scrollY + node.getBoundingClientRect().top - covered) });
}

/**
 * @param {number} ms
 * @param {AbortSignal} signal
 * @returns {Promise<void>}
 */
function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

// ---------------------------------------------------------------------------------------
// The page: sign-in, channel list, routing (#/channel/<id>), sign-out.

/**
 * @type {{
 *   token: string | null,
 *   me: {accountId?: string, name?: string} | null,
 *   channels: Channel[],
 *   view: ChannelView | null,
 *   inbox: {asks: PendingAsk[], known: Set<string> | null,
 *     timer: ReturnType<typeof setInterval> | undefined, running: boolean, again: boolean},
 * }}
 */
const app = {
  token: null,
  me: null,
  channels: [],
  view: null,
  inbox: { asks: [], known: null, timer: undefined, running: false, again: false },
};

/** @param {string} [message] */
function showSignin(message = "") {
  app.token = null;
  app.me = null;
  app.view?.stop();
  app.view = null;
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
    listed = await unary(token, "ListChannels", {});
  } catch (error) {
    if (!(error instanceof RpcError)) throw error;
    const refusal = signInRefusal(error.code, error.message, fromForm, error.fromServer);
    if (refusal.forget) forgetToken(token);
    showSignin(refusal.text);
    return false;
  }
  if (localStorage.getItem(SESSION_KEY) !== token) sessionStorage.setItem(TOKEN_KEY, token);
  app.token = token;
  app.channels = Array.isArray(listed.channels) ? listed.channels : [];
  $("signin-view").hidden = true;
  $("app-view").hidden = false;
  $("sign-out").hidden = false;
  $("session-status").textContent = "Signed in";
  renderChannels();
  route();
  startInbox();
  showMe(token);
  return true;
}

/**
 * "Signed in as <name>" (GetMe); the plain "Signed in" stays if that call fails.
 * @param {string} token
 */
async function showMe(token) {
  let me;
  try {
    me = await unary(token, "GetMe", {});
  } catch (error) {
    if (!(error instanceof RpcError)) throw error;
    return;
  }
  app.me = me;
  if (app.token !== token) return;
  const status = $("session-status");
  status.replaceChildren("Signed in as ", h("bdi", { class: "me" }, me.name || me.accountId || "you"));
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
    let pageToken = "";
    do {
      const page = await unary(token, "ListPendingAsks", { pageSize: 100, pageToken });
      asks.push(...(page.asks ?? []));
      pageToken = page.nextPageToken ?? "";
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
      const ask = item.ask ?? {};
      return h(
        "li",
        {},
        h(
          "a",
          { href: askHref(ask.askId ?? ""), dataset: { askId: ask.askId ?? "", channelId: item.channelId ?? "" } },
          h("bdi", { class: "inbox-question" }, firstQuestion(ask)),
          h(
            "span",
            { class: "inbox-meta" },
            h("bdi", {}, item.authorName || item.authorAccountId || "An agent"),
            ` in # `,
            h("bdi", {}, item.channelName || channelName(item.channelId)),
            moreQuestions((ask.questions ?? []).length),
            " · ",
            timeNode(item.askedAt ?? ""),
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
      body: firstQuestion(item.ask ?? {}),
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
          h("bdi", { class: "channel-name" }, `# ${channel.name || channel.channelId}`),
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
      found = await unary(token, "GetAsk", { askId });
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
      error.textContent = `There is no channel “${notFound}” among yours. Pick one from the list.`;
      error.hidden = false;
    }
    return;
  }
  localStorage.setItem(LAST_CHANNEL_KEY, channel.channelId);
  $("channel-title").textContent = `# ${channel.name || channel.channelId}`;
  if (app.token === null) return;
  app.view = new ChannelView({
    token: app.token,
    channel,
    onAuthLost: () => {
      $("session-status").textContent = "Token no longer accepted";
    },
    onChange: () => refreshInbox(),
    focusAsk,
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
    return await unary(token, "GetMe", {});
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
    const stay = h("button", { type: "button", class: "button button-primary" }, words.stayLabel);
    const go = h("button", { type: "button", class: "button" }, words.switchLabel);
    stay.addEventListener("click", () => done(false));
    go.addEventListener("click", () => done(true));
    const panel = h(
      "section",
      { class: "signin switch-account", id: "switch-account", role: "dialog", "aria-labelledby": "switch-title" },
      h("h1", { id: "switch-title" }, words.title),
      h("p", {}, words.text),
      h("div", { class: "switch-actions" }, stay, go),
    );
    $("main").append(panel);
    stay.focus();
  });
}

function init() {
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
