// The Compass page: sign in with a token, pick a channel, watch its messages live, answer asks.

import { AskForm, closedView, interruptedNote, isFinal, questionSignature } from "./ask.js";
import { RpcError, serverStream, unary } from "./connect.js";
import { h, reconcile, timeNode } from "./dom.js";

const TOKEN_KEY = "compass.token";
const LAST_CHANNEL_KEY = "compass.lastChannel"; // an id, not a secret: kept across tabs
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 10_000;

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------------------------------
// One channel: a resumable WatchChannel and the messages it delivered.

class ChannelView {
  constructor({ token, channel, onAuthLost }) {
    this.token = token;
    this.channel = channel;
    this.onAuthLost = onAuthLost;
    this.revision = 0n; // highest revision seen: where a new watch resumes
    this.loaded = false; // the first ListMessages pages are all in
    this.messages = new Map(); // messageId -> message
    this.articles = new Map(); // messageId -> <article>
    this.forms = new Map(); // askId -> AskForm (pending asks)
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
        delay = Math.min(delay * 2, RETRY_MAX_MS);
      }
    }
    if (!this.messages.size) this.empty.textContent = "No messages yet.";
    this.loaded = true;
    this.showFirstPending();
    await this.watch(signal);
  }

  /** Waits `ms`, saying every second how long is left (`text(seconds)`). */
  async countdown(ms, signal, text) {
    const end = Date.now() + ms;
    while (!signal.aborted) {
      const left = end - Date.now();
      if (left <= 0) return;
      this.setStatus(text(Math.max(1, Math.ceil(left / 1000))), "reconnecting");
      await sleep(Math.min(left, ((left - 1) % 1000) + 1), signal);
    }
  }

  /** Once the channel is loaded: brings its first pending question into view (on a phone
   * the form is taller than the screen, and its end is not where to start); with none, the
   * newest message. */
  showFirstPending() {
    const first = this.list.querySelector("form.ask-pending fieldset.question");
    if (!first) {
      this.list.lastElementChild?.scrollIntoView({ block: "end" });
      return;
    }
    // Just below the sticky channel header, which would otherwise cover the question.
    const head = document.querySelector(".channel-head");
    const covered = head ? head.getBoundingClientRect().height + 8 : 0;
    window.scrollTo({ top: Math.max(0, window.scrollY + first.getBoundingClientRect().top - covered) });
  }

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
      const wait = Math.round(delay * (0.75 + Math.random() / 2));
      await this.countdown(wait, signal, (s) => `Reconnecting in ${s} s…`);
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
  }

  /** Whether to retry after `error`; otherwise says why the channel cannot be shown. */
  recoverable(error) {
    if (!(error instanceof RpcError)) {
      console.error(error);
      return true;
    }
    if (!["unauthenticated", "permission_denied", "not_found", "invalid_argument"].includes(error.code)) {
      return true;
    }
    this.setStatus("Stopped", "stopped");
    if (error.code === "unauthenticated") this.onAuthLost();
    this.showError(`This channel cannot be shown: ${error.message}`);
    return false;
  }

  showError(text) {
    this.error.textContent = text;
    this.error.hidden = false;
  }

  /** Shows `message` (new, or a newer version of one shown: replaced by messageId). */
  apply(message) {
    const id = message.messageId;
    if (!id) return;
    const revision = toBigInt(message.revision);
    const known = this.messages.get(id);
    if (known && toBigInt(known.revision) > revision) return; // an older copy (a GetAsk race)
    if (revision > this.revision) this.revision = revision;
    this.messages.set(id, message);
    let article = this.articles.get(id);
    const isNew = !article;
    if (isNew) {
      article = h("article", { class: "message", dataset: { messageId: id } });
      this.articles.set(id, article);
    }
    reconcile(article, [
      h("p", { class: "message-meta" }, timeNode(message.createdAt ?? "")),
      ...(message.blocks ?? []).map((block) => this.blockNode(block)),
    ]);
    if (isNew) this.place(article, message);
  }

  place(article, message) {
    this.empty.remove();
    const nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 200;
    const key = orderKey(message);
    const after = [...this.messages.values()]
      .filter((other) => other.messageId !== message.messageId && compareKeys(orderKey(other), key) > 0)
      .sort((a, b) => compareKeys(orderKey(a), orderKey(b)))[0];
    this.list.insertBefore(article, after ? this.articles.get(after.messageId) ?? null : null);
    // While loading, nothing scrolls: `showFirstPending` picks the place once all is in.
    if (this.loaded && nearBottom && !after) article.scrollIntoView({ block: "end" });
  }

  blockNode(block) {
    if (block.text) return h("div", { class: "text-block" }, block.text.text ?? "");
    if (block.ask) return this.askNode(block.ask);
    return h("p", { class: "muted" }, "(a block this page cannot show)");
  }

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

  async respond(askId, answers) {
    await this.closing(askId, unary(this.token, "RespondToAsk", { askId, answers }));
    await this.refreshAsk(askId);
  }

  async decline(askId, reason) {
    await this.closing(askId, unary(this.token, "DeclineAsk", { askId, reason }));
    await this.refreshAsk(askId);
  }

  /** Awaits a call that closes the ask. Refused because the ask was closed meanwhile
   * (FAILED_PRECONDITION), the error carries the ask as stored (`closedAsk`), so the form can
   * say how it ended. */
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

  async fetchAsk(askId) {
    try {
      return await unary(this.token, "GetAsk", { askId });
    } catch (error) {
      if (!(error instanceof RpcError)) throw error;
      return null;
    }
  }

  /** The watch will deliver the ask's new state too; fetching it now shows it at once even
   * while the watch is reconnecting. */
  async refreshAsk(askId) {
    const got = await this.fetchAsk(askId);
    const message = got ? this.messages.get(got.messageId) : null;
    if (!message || !got.ask) return;
    const blocks = (message.blocks ?? []).map((block) =>
      block.ask && block.ask.askId === askId ? { ask: got.ask } : block,
    );
    this.apply({ ...message, blocks });
  }
}

function toBigInt(value) {
  try {
    return BigInt(value ?? 0);
  } catch {
    return 0n;
  }
}

function orderKey(message) {
  const time = Date.parse(message.createdAt ?? "");
  return [Number.isNaN(time) ? 0 : time, message.messageId ?? ""];
}

function compareKeys(a, b) {
  if (a[0] !== b[0]) return a[0] - b[0];
  return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
}

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

const app = {
  token: null,
  channels: [],
  view: null,
};

function showSignin(message = "") {
  app.token = null;
  app.view?.stop();
  app.view = null;
  $("app-view").hidden = true;
  $("sign-out").hidden = true;
  $("session-status").textContent = "";
  $("signin-view").hidden = false;
  const error = $("signin-error");
  error.textContent = message;
  error.hidden = !message;
  $("token-input").focus();
}

async function enter(token, { fromForm }) {
  let listed;
  try {
    listed = await unary(token, "ListChannels", {});
  } catch (error) {
    if (!(error instanceof RpcError)) throw error;
    if (error.code === "unauthenticated") {
      sessionStorage.removeItem(TOKEN_KEY);
      showSignin(fromForm ? "That token was not accepted." : "Your token is no longer accepted. Sign in again.");
    } else if (error.code === "permission_denied") {
      sessionStorage.removeItem(TOKEN_KEY);
      showSignin("That token belongs to an agent account. Sign in with a person's token.");
    } else {
      showSignin(`Could not sign in: ${error.message}`);
    }
    return false;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  app.token = token;
  app.channels = Array.isArray(listed.channels) ? listed.channels : [];
  $("signin-view").hidden = true;
  $("app-view").hidden = false;
  $("sign-out").hidden = false;
  $("session-status").textContent = "Signed in";
  renderChannels();
  route();
  return true;
}

function renderChannels() {
  const list = $("channel-list");
  list.replaceChildren(
    ...app.channels.map((channel) =>
      h("li", {}, h("a", { href: channelHref(channel.channelId), dataset: { channelId: channel.channelId } }, `# ${channel.name || channel.channelId}`)),
    ),
  );
  $("channels-empty").hidden = app.channels.length > 0;
}

function channelHref(channelId) {
  return `#/channel/${encodeURIComponent(channelId)}`;
}

function route() {
  if (!app.token) return;
  const match = /^#\/channel\/(.+)$/.exec(location.hash);
  let wanted = match ? safeDecode(match[1]) : null;
  let channel = app.channels.find((c) => c.channelId === wanted) ?? null;
  if (!match) {
    // No channel in the address: the one this person had open last, else the only one.
    const last = localStorage.getItem(LAST_CHANNEL_KEY);
    channel = app.channels.find((c) => c.channelId === last) ?? (app.channels.length === 1 ? app.channels[0] : null);
  }
  if (app.view && channel && app.view.channel.channelId === channel.channelId) return;
  app.view?.stop();
  app.view = null;
  for (const link of document.querySelectorAll("#channel-list a")) {
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
    if (match) {
      // A link to a channel that does not exist, or is not one of this person's.
      $("channel-title").textContent = "Channel not found";
      error.textContent = `There is no channel “${wanted ?? match[1]}” among yours. Pick one from the list.`;
      error.hidden = false;
    }
    return;
  }
  wanted = channel.channelId;
  localStorage.setItem(LAST_CHANNEL_KEY, wanted);
  $("channel-title").textContent = `# ${channel.name || channel.channelId}`;
  app.view = new ChannelView({
    token: app.token,
    channel,
    onAuthLost: () => {
      $("session-status").textContent = "Token no longer accepted";
    },
  });
  app.view.run();
}

function safeDecode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/** Tokens are never taken from the address: drop one if someone put it there. */
function stripTokenFromUrl() {
  const url = new URL(location.href);
  const hash = new URLSearchParams(url.hash.replace(/^#/, ""));
  let stripped = false;
  if (url.searchParams.has("token")) {
    url.searchParams.delete("token");
    stripped = true;
  }
  if (hash.has("token")) {
    url.hash = "";
    stripped = true;
  }
  if (stripped) history.replaceState(null, "", url.toString());
  return stripped;
}

function init() {
  const stripped = stripTokenFromUrl();
  $("signin-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("token-input");
    const token = input.value.trim();
    if (!token) {
      showSignin("Paste your access token first.");
      return;
    }
    const button = $("signin-submit");
    button.disabled = true;
    enter(token, { fromForm: true }).then((entered) => {
      button.disabled = false;
      if (entered) input.value = ""; // a refused token stays, to be corrected
    });
  });
  $("sign-out").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    $("messages").replaceChildren();
    $("channel-list").replaceChildren();
    showSignin();
  });
  window.addEventListener("hashchange", route);
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) enter(token, { fromForm: false });
  else showSignin(stripped ? "Tokens in links are not accepted: paste yours below." : "");
}

init();
