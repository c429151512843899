// @ts-check
// One channel of the page: the messages it holds (ListMessages), then its live changes
// (WatchChannel, resumed with backoff), each ask as its pending form or its closed view.

import { interruptedNote, isFinal, questionSignature } from "./ask.js";
import { closedView } from "./closed.js";
import { create } from "@bufbuild/protobuf";

import { MessageBlockSchema, MessageSchema } from "../gen/compass/v1/comms_pb.js";
import { RECEIPT_WAIT_MS } from "./delivery.js";
import { byId as $, h, reconcile, timeNode, untrusted } from "./dom.js";
import { AskForm } from "./form.js";
import { RETRY_FIRST_MS, compareKeys, jittered, nextDelay, orderKey, stopsChannel, tickWait } from "./page.js";
import { RpcError, comms, stream, unary } from "./rpc.js";

/**
 * @typedef {import("./ask.js").Ask} Ask
 * @typedef {import("./ask.js").Answer} Answer
 * @typedef {import("./page.js").Message} Message
 * @typedef {import("./page.js").Block} Block
 * @typedef {import("./page.js").Channel} Channel
 */

export class ChannelView {
  /**
   * @param {{token: string, channel: Channel, onAuthLost: () => void, onChange?: () => void,
   *   focusAsk?: string | null, receiptWaitMs?: number}} options
   */
  constructor({ token, channel, onAuthLost, onChange, focusAsk = null, receiptWaitMs = RECEIPT_WAIT_MS }) {
    this.client = comms(token);
    this.channel = channel;
    this.onAuthLost = onAuthLost;
    this.onChange = onChange ?? (() => {});
    this.focusAsk = focusAsk; // an ask to show first (a deep link), else the first pending one
    this.receiptWaitMs = receiptWaitMs; // how long a closed ask's delivery receipt is awaited
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
      const page = await unary(this.client.listMessages({ channelId: this.channel.channelId, pageToken }, { signal }));
      for (const message of page.messages) this.apply(message);
      pageToken = page.nextPageToken;
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
        const request = { channelId: this.channel.channelId, afterRevision: this.revision };
        for await (const response of stream(this.client.watchChannel(request, { signal }))) {
          delay = RETRY_FIRST_MS; // the server accepted the watch
          if (response.message) this.apply(response.message);
          // Sent once the replay is done, then as a keepalive while the channel is quiet.
          if (response.caughtUp) this.setStatus("Live", "live");
        }
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
    const revision = message.revision;
    const known = this.messages.get(id);
    if (known && known.revision > revision) return; // an older copy (a GetAsk race)
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
        untrusted("bdi", { class: "author" }, message.authorName || message.authorAccountId || "Someone"),
        " · ",
        timeNode(message.createdAt),
      ),
      ...message.blocks.map((block) => this.blockNode(block, message)),
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
    const pane = scrollerOf(this.list);
    const nearBottom = pane.scrollTop + pane.clientHeight >= pane.scrollHeight - 200;
    const key = orderKey(message);
    const after = [...this.messages.values()]
      .filter((other) => other.messageId !== message.messageId && compareKeys(orderKey(other), key) > 0)
      .sort((a, b) => compareKeys(orderKey(a), orderKey(b)))[0];
    this.list.insertBefore(article, after ? this.articles.get(after.messageId) ?? null : null);
    // While loading, nothing scrolls: `showStart` picks the place once all is in.
    if (this.loaded && nearBottom && !after) article.scrollIntoView({ block: "end" });
  }

  /**
   * @param {Block} block
   * @param {Message} message the block's message
   */
  blockNode(block, message) {
    const { block: part } = block;
    if (part.case === "text") return untrusted("div", { class: "text-block" }, part.value.text);
    if (part.case === "ask") return this.askNode(part.value, message.authorName || message.authorAccountId);
    return h("p", { class: "muted" }, "(a block this page cannot show)");
  }

  /**
   * @param {Ask} ask
   * @param {string} agent who asked (the message's author)
   */
  askNode(ask, agent) {
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
      return closedView(ask, { ...this.notes.get(askId), agent, receiptWaitMs: this.receiptWaitMs });
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
    await this.closing(askId, unary(this.client.respondToAsk({ askId, answers })));
    await this.refreshAsk(askId);
  }

  /**
   * @param {string} askId
   * @param {string} reason
   */
  async decline(askId, reason) {
    await this.closing(askId, unary(this.client.declineAsk({ askId, reason })));
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
   * @returns {Promise<import("../gen/compass/v1/comms_pb.js").GetAskResponse | null>}
   */
  async fetchAsk(askId) {
    try {
      return await unary(this.client.getAsk({ askId }));
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
    const message = got ? this.messages.get(got.messageId) : null;
    if (!got || !message || !got.ask) return;
    const ask = got.ask;
    const blocks = message.blocks.map((block) =>
      block.block.case === "ask" && block.block.value.askId === askId
        ? create(MessageBlockSchema, { block: { case: "ask", value: ask } })
        : block,
    );
    this.apply(create(MessageSchema, { ...message, blocks }));
  }
}

/**
 * The element whose scrolling moves `node`: the channel pane on a desktop (app.css gives it
 * its own scrollbar, so that the top bar and the sidebar stay in view), the page on a phone.
 * @param {Element} node
 * @returns {Element}
 */
function scrollerOf(node) {
  for (let up = node.parentElement; up && up !== document.body; up = up.parentElement) {
    const overflow = getComputedStyle(up).overflowY;
    if (overflow === "auto" || overflow === "scroll") return up;
  }
  return document.scrollingElement ?? document.documentElement;
}

/**
 * Where to scroll to show `node` (an ask, or its first question): the start of its message
 * (who asked, and the text before the ask), when that fits in the upper half of the visible
 * pane above it; else `node` itself. (Scrolling to the question put the asker's name and
 * lead-in above the fold.)
 * @param {Element} node
 * @returns {Element}
 */
function withItsMessage(node) {
  const message = node.closest("article");
  if (!message) return node;
  const above = node.getBoundingClientRect().top - message.getBoundingClientRect().top;
  return above < scrollerOf(node).clientHeight / 2 ? message : node;
}

/**
 * Scrolls `node` to just below the sticky channel header, which would otherwise cover it.
 * @param {Element} node
 */
function scrollBelowHeader(node) {
  const pane = scrollerOf(node);
  const head = document.querySelector(".channel-head");
  const covered = head ? head.getBoundingClientRect().height + 8 : 0;
  // The page's own scroller starts at the top of the window; a pane where it sits.
  const paneTop = pane === document.scrollingElement ? 0 : pane.getBoundingClientRect().top;
  const top = pane.scrollTop + node.getBoundingClientRect().top - paneTop - covered;
  pane.scrollTo({ top: Math.max(0, top) });
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
