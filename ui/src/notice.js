// @ts-check
// What a push says, as the service worker shows it (sw.js), and what a tap on one of its
// buttons sends: pure, so that Node tests it (tests/ui/notice.test.mjs). The payloads are
// the server's (compass_server/domain/push.py; docs/answering/push.md):
//   {"type": "ask", "ask_id", "tag", "title", "body", "url", "actions": [{"action", "title"}],
//    "answer_url", "answer_token"}
//   {"type": "ask_closed", "ask_id", "tag", "status", "by"}
// Anything else (a push from an older or newer server) is ignored, never shown half-read.

/**
 * @typedef {{action: string, title: string}} NoticeAction
 * @typedef {{ask_id: string, url: string, answer_url: string, answer_token: string}} NoticeData
 * @typedef {{tag: string, body: string, actions: NoticeAction[], data: NoticeData,
 *   icon: string, renotify: boolean}} NoticeOptions
 * @typedef {{kind: "ask", title: string, options: NoticeOptions}
 *   | {kind: "closed", tag: string, status: string, by: string}
 *   | {kind: "unknown"}} Notice
 */

export const ICON = "icons/icon-192.png";

/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * @param {Record<string, unknown>} doc
 * @param {string} key
 */
function text(doc, key) {
  const value = doc[key];
  return typeof value === "string" ? value : null;
}

/**
 * What to do with a push's JSON (already parsed).
 * @param {unknown} payload
 * @returns {Notice}
 */
export function noticeOf(payload) {
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
  /** @type {NoticeAction[]} */
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
      renotify: true, // a reminder (the same tag) alerts again
    },
  };
}

/**
 * The request a tap on a button sends: the token and the option, as JSON, no credential.
 * @param {NoticeData} data
 * @param {string} optionId
 * @returns {{url: string, init: RequestInit}}
 */
export function answerRequest(data, optionId) {
  return {
    url: data.answer_url,
    init: {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ answer_token: data.answer_token, option_id: optionId }),
      credentials: "omit",
      cache: "no-store",
    },
  };
}

/**
 * What a tap's answer means: done (answered now, or the ask had ended: its notice goes), or
 * open the ask so the person can see why and answer there.
 * @param {number} status the HTTP status of POST answer_url (0: no answer at all)
 * @returns {"done" | "open"}
 */
export function afterTap(status) {
  return status === 200 || status === 409 ? "done" : "open";
}

/**
 * The address to open for a notice: its `url` when it is of this app (`scope`), else the
 * app itself (a push never sends a page elsewhere).
 * @param {NoticeData | undefined} data
 * @param {string} scope the service worker's scope, e.g. https://compass.example.com/
 */
export function openUrl(data, scope) {
  const url = data?.url ?? "";
  return url.startsWith(scope) ? url : scope;
}
