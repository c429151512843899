// @ts-check
// The page's decisions that need neither the DOM nor the network (app.js does the rest):
// addresses, message order, the retry policy and the sign-in messages. Kept apart so that
// Node can import and test them (tests/ui/page.test.mjs): app.js starts the page on import.

import { millis } from "./ask.js";

/**
 * @typedef {import("./ask.js").Ask} Ask
 * @typedef {import("./ask.js").Sentence} Sentence
 * @typedef {import("../gen/compass/v1/comms_pb.js").MessageBlock} Block
 * @typedef {import("../gen/compass/v1/comms_pb.js").Message} Message
 * @typedef {import("../gen/compass/v1/comms_pb.js").Channel} Channel
 * @typedef {import("../gen/compass/v1/comms_pb.js").PendingAsk} PendingAsk
 */

export const RETRY_FIRST_MS = 500;
export const RETRY_MAX_MS = 10_000;

/**
 * Codes after which a channel view stops instead of retrying: retrying cannot help (the
 * token, the person's access or the request is at fault). Everything else (unavailable,
 * internal, unknown, ...) is retried with backoff.
 */
export const CHANNEL_STOP_CODES = Object.freeze(["unauthenticated", "permission_denied", "not_found", "invalid_argument"]);

/** @param {string} code */
export function stopsChannel(code) {
  return CHANNEL_STOP_CODES.includes(code);
}

/**
 * The next backoff delay: doubled, at most RETRY_MAX_MS.
 * @param {number} delay
 */
export function nextDelay(delay) {
  return Math.min(delay * 2, RETRY_MAX_MS);
}

/**
 * `delay` spread by ±25% (`random` in [0, 1)), so that many pages do not reconnect in step.
 * @param {number} delay
 * @param {number} random
 */
export function jittered(delay, random) {
  return Math.round(delay * (0.75 + random / 2));
}

/**
 * How long to sleep, `left` ms before the end, so that the next wake-up is on a whole second
 * of the countdown (1..1000 ms).
 * @param {number} left
 */
export function tickWait(left) {
  return Math.min(left, ((left - 1) % 1000) + 1);
}

/**
 * Where a message goes in the channel: by creation time, then by id.
 * @param {Message} message
 * @returns {[number, string]}
 */
export function orderKey(message) {
  const time = millis(message.createdAt);
  return [Number.isNaN(time) ? 0 : time, message.messageId];
}

/**
 * @param {[number, string]} a
 * @param {[number, string]} b
 */
export function compareKeys(a, b) {
  if (a[0] !== b[0]) return a[0] - b[0];
  return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
}

/** @param {string} channelId */
export function channelHref(channelId) {
  return `#/channel/${encodeURIComponent(channelId)}`;
}

/** @param {string} askId */
export function askHref(askId) {
  return `#/ask/${encodeURIComponent(askId)}`;
}

/**
 * `decodeURIComponent`, or null for a broken escape.
 * @param {string} text
 */
export function safeDecode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/**
 * What the address's fragment names: an ask (`#/ask/<id>`), a channel (`#/channel/<id>`) or
 * neither. `id` is null when its percent-encoding is broken; `raw` is the id as written.
 * @param {string} hash
 * @returns {{kind: "ask" | "channel" | "none", id: string | null, raw: string}}
 */
export function parseRoute(hash) {
  const ask = /^#\/ask\/(.+)$/.exec(hash);
  if (ask) return { kind: "ask", id: safeDecode(ask[1]), raw: ask[1] };
  const channel = /^#\/channel\/(.+)$/.exec(hash);
  if (channel) return { kind: "channel", id: safeDecode(channel[1]), raw: channel[1] };
  return { kind: "none", id: null, raw: "" };
}

/**
 * The code of a sign-in link's fragment (`#/sign-in/<code>`), else null.
 * @param {string} hash
 */
export function signInCode(hash) {
  return /^#\/sign-in\/([A-Za-z0-9_-]{1,100})$/.exec(hash)?.[1] ?? null;
}

/**
 * What the page asks when a sign-in link is for another account than the one this browser
 * is signed in as (without it, opening someone else's link, e.g. one an attacker sent,
 * silently replaced the session). Names are shown as given, each isolated (a Sentence).
 * @param {string} current who this browser is signed in as
 * @param {string} incoming who the link signs in
 * @returns {{title: string, text: Sentence, switchLabel: Sentence, stayLabel: Sentence}}
 */
export function switchQuestion(current, incoming) {
  return {
    title: "Switch accounts?",
    text: [
      "You are signed in as ",
      { name: current },
      ". This sign-in link is for ",
      { name: incoming },
      ". Only switch if you asked for this link yourself.",
    ],
    switchLabel: ["Switch to ", { name: incoming }],
    stayLabel: ["Stay signed in as ", { name: current }],
  };
}

/**
 * `href` without a token put in its query (`?token=`) or fragment (`#token=`: the whole
 * fragment goes), or null when it has none. Tokens are never taken from the address.
 * @param {string} href
 */
export function withoutToken(href) {
  const url = new URL(href);
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
  return stripped ? url.toString() : null;
}

/**
 * What the sign-in form says when ListChannels refused a token with `code`, and whether the
 * token is to be forgotten (it will never work).
 * @param {string} code
 * @param {string} message
 * @param {boolean} fromForm the token was just pasted (else it was stored)
 * @param {boolean} fromServer the server itself said `code` (else a proxy's bare status did:
 *   that says nothing about the token, which is kept)
 * @returns {{text: string, forget: boolean}}
 */
export function signInRefusal(code, message, fromForm, fromServer) {
  if (!fromServer) return { text: `Could not sign in: ${message}`, forget: false };
  if (code === "unauthenticated") {
    return {
      text: fromForm ? "That token was not accepted." : "Your token is no longer accepted. Sign in again.",
      forget: true,
    };
  }
  if (code === "permission_denied") {
    return { text: "That token belongs to an agent account. Sign in with a person's token.", forget: true };
  }
  return { text: `Could not sign in: ${message}`, forget: false };
}

/**
 * An ask's first question, for a one-line summary.
 * @param {Ask | undefined} ask
 */
export function firstQuestion(ask) {
  const q = ask?.questions[0];
  return q?.question || q?.header || "A question";
}

/**
 * The inbox's note on an ask of several questions: how many more than the one shown.
 * ("+1 more" read as one more channel or ask; it is one more question.)
 * @param {number} questions the ask's number of questions
 */
export function moreQuestions(questions) {
  const more = questions - 1;
  if (more <= 0) return "";
  return ` · +${more} more ${more === 1 ? "question" : "questions"}`;
}

/**
 * The channel to open when the address names none: the one this person had open last (when
 * still theirs), else the only one, else the channel of the ask waiting longest (`asks` are
 * oldest first), else none.
 * @param {Channel[]} channels
 * @param {string | null} last
 * @param {PendingAsk[]} asks
 * @returns {Channel | null}
 */
export function defaultChannel(channels, last, asks) {
  const known = (/** @type {string | null | undefined} */ id) =>
    id ? channels.find((c) => c.channelId === id) ?? null : null;
  const remembered = known(last);
  if (remembered) return remembered;
  if (channels.length === 1) return channels[0] ?? null;
  for (const item of asks) {
    const channel = known(item.channelId);
    if (channel) return channel;
  }
  return null;
}

/**
 * The number of pending asks per channel id.
 * @param {PendingAsk[]} asks
 */
export function countByChannel(asks) {
  /** @type {Map<string | undefined, number>} */
  const counts = new Map();
  for (const item of asks) counts.set(item.channelId, (counts.get(item.channelId) ?? 0) + 1);
  return counts;
}
