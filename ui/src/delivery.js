// @ts-check
// The delivery receipt of a closed ask (Ask.delivery, reported by the side that posted the ask
// with AgentService.ReportDelivery): what the agent received of the answer or decline, or,
// until a receipt arrives, that it is awaited and then that it is missing. Nothing here
// shows an answer as delivered without a receipt. The words are decided by `receiptOf`
// (pure; Node tests it in tests/ui/delivery.test.mjs); `receiptView` renders them, agent text
// always as text, and re-renders by itself when the wait for a receipt runs out.

import { DeliveryState, DeliveryStateSchema } from "../gen/compass/v1/comms_pb.js";
import { STATUS, askStatus, enumName, millis, rfc3339 } from "./ask.js";
import { append, h, timeNode, untrusted } from "./dom.js";

/**
 * @typedef {import("./ask.js").Ask} Ask
 * @typedef {import("./ask.js").AskDelivery} AskDelivery
 * @typedef {"delivered" | "changed" | "not-delivered" | "unknown" | "waiting" | "missing"} ReceiptState
 * @typedef {string | {lead: string} | {name: string} | {text: string}
 *   | {time: import("./ask.js").Timestamp | undefined}} Part
 *   A piece of a sentence: our own words, the bold start, a name, someone else's text (both
 *   isolated), or a timestamp (shown in local time).
 * @typedef {object} Receipt What the page says about an ask's delivery.
 * @property {ReceiptState} state
 * @property {Part[]} line the sentence
 * @property {Part[]} byline who reported it and when ([] when the line says it)
 * @property {string} payload what the agent was handed, when the receipt says
 * @property {number | null} changesInMs how long until "waiting" turns "missing" (else null)
 */

/** The DeliveryState names. */
export const DELIVERY = Object.freeze({
  UNSPECIFIED: enumName(DeliveryStateSchema, DeliveryState.UNSPECIFIED),
  DELIVERED: enumName(DeliveryStateSchema, DeliveryState.DELIVERED),
  DELIVERED_WITH_CHANGES: enumName(DeliveryStateSchema, DeliveryState.DELIVERED_WITH_CHANGES),
  NOT_DELIVERED: enumName(DeliveryStateSchema, DeliveryState.NOT_DELIVERED),
});

/** How long after an ask was answered or declined the page waits for its receipt before it
 * says none came (the posting side reports within a second or two when all is well). */
export const RECEIPT_WAIT_MS = 20_000;

/** The address's query parameter that shortens that wait (for tests and demos): whole
 * milliseconds, at most RECEIPT_WAIT_MS, so it can only make the page warn sooner. */
export const RECEIPT_WAIT_PARAM = "receipt-wait-ms";

/**
 * The wait for a receipt, from the page address's query (`location.search`).
 * @param {string} search
 */
export function receiptWaitFrom(search) {
  const raw = new URLSearchParams(search).get(RECEIPT_WAIT_PARAM);
  if (raw === null || !/^\d{1,9}$/.test(raw)) return RECEIPT_WAIT_MS;
  return Math.min(Number(raw), RECEIPT_WAIT_MS);
}

/**
 * When the ask reached the outcome a receipt is for (ms since the epoch, NaN if unknown).
 * @param {Ask} ask
 */
function finalAt(ask) {
  const stamp = askStatus(ask) === STATUS.ANSWERED ? ask.answeredAt || ask.closedAt : ask.closedAt || ask.answeredAt;
  return millis(stamp);
}

/**
 * What to say about `ask`'s delivery, or null when there is nothing to say (pending, or a
 * final ask no receipt is due for: withdrawn, timed out, expired).
 * @param {Ask} ask
 * @param {{agent: string, now: number, waitMs: number}} context `agent`: who asked (the
 *   message's author); `now`: ms since the epoch; `waitMs`: see RECEIPT_WAIT_MS
 * @returns {Receipt | null}
 */
export function receiptOf(ask, { agent, now, waitMs }) {
  const status = askStatus(ask);
  if (status === STATUS.PENDING) return null;
  const asker = agent || "the agent";
  const delivery = ask.delivery;
  if (delivery) return reported(delivery, asker);
  if (status !== STATUS.ANSWERED && status !== STATUS.DECLINED) return null;
  const left = waitMs - (now - finalAt(ask));
  if (left > 0) {
    return { state: "waiting", line: ["Waiting for ", { name: asker }, " to confirm delivery"], byline: [], payload: "", changesInMs: left };
  }
  // Past the wait, or no time to count from: never "waiting" for ever.
  return {
    state: "missing",
    line: [{ lead: "No delivery receipt" }, " from ", { name: asker }, " yet: the agent may not have received this"],
    byline: [],
    payload: "",
    changesInMs: null,
  };
}

/**
 * The words for a stored receipt.
 * @param {AskDelivery} delivery
 * @param {string} asker
 * @returns {Receipt}
 */
function reported(delivery, asker) {
  const state = enumName(DeliveryStateSchema, delivery.state);
  const name = { name: delivery.reportedByName || delivery.reportedByAccountId || asker };
  const time = { time: delivery.reportedAt };
  const detail = delivery.detail ?? "";
  const payload = delivery.payload ?? "";
  /** @param {ReceiptState} kind @param {Part[]} line @param {Part[]} byline @returns {Receipt} */
  const receipt = (kind, line, byline) => ({ state: kind, line, byline, payload, changesInMs: null });
  switch (state) {
    case DELIVERY.DELIVERED:
      return receipt("delivered", [{ lead: "Delivered" }, " to ", name, " at ", time, ...(detail ? [": ", { text: detail }] : [])], []);
    case DELIVERY.DELIVERED_WITH_CHANGES:
      return receipt(
        "changed",
        [{ lead: "Delivered with changes:" }, " ", { text: detail || "the agent's side did not say what changed" }],
        ["Delivered to ", name, " at ", time],
      );
    case DELIVERY.NOT_DELIVERED:
      return receipt(
        "not-delivered",
        [{ lead: "Not delivered:" }, " ", { text: detail || "no reason was given" }],
        ["Reported by ", name, " at ", time],
      );
    default:
      // A state this page does not know (or none): not shown as delivered.
      return receipt(
        "unknown",
        [{ lead: "Delivery not confirmed:" }, ` the receipt says ${state}, which this page does not know`, ...(detail ? [": ", { text: detail }] : [])],
        ["Reported by ", name, " at ", time],
      );
  }
}

/**
 * A sentence's plain text (timestamps in RFC 3339): what a screen shows, less the formatting.
 * @param {Part[]} parts
 */
export function partsText(parts) {
  return parts
    .map((part) => {
      if (typeof part === "string") return part;
      if ("time" in part) return rfc3339(part.time);
      return Object.values(part)[0];
    })
    .join("");
}

/**
 * @param {Part[]} parts
 * @returns {import("./dom.js").Child[]}
 */
function partNodes(parts) {
  return parts.map((part) => {
    if (typeof part === "string") return part;
    if ("lead" in part) return h("strong", {}, part.lead);
    if ("name" in part) return h("strong", {}, untrusted("bdi", {}, part.name));
    if ("text" in part) return untrusted("bdi", { class: "receipt-detail" }, part.text);
    return timeNode(part.time);
  });
}

/**
 * The receipt of a closed ask, as a node that keeps itself current while a receipt is awaited
 * (it turns "missing" when the wait runs out; a receipt that arrives comes with a new copy of
 * the ask, and so a new node). Null when there is nothing to say.
 * @param {Ask} ask
 * @param {{agent: string, waitMs: number}} context
 */
export function receiptView(ask, { agent, waitMs }) {
  const first = receiptOf(ask, { agent, now: Date.now(), waitMs });
  if (!first) return null;
  const node = h("div", { class: "receipt", role: "status" });
  /** @param {Receipt} receipt */
  const render = (receipt) => {
    node.dataset.state = receipt.state;
    node.replaceChildren();
    append(node, [
      h("p", { class: "receipt-line" }, partNodes(receipt.line)),
      receipt.byline.length ? h("p", { class: "receipt-by" }, partNodes(receipt.byline)) : null,
      receipt.payload
        ? h(
            "details",
            { class: "receipt-payload" },
            h("summary", {}, "What the agent received"),
            untrusted("pre", {}, receipt.payload),
          )
        : null,
    ]);
    if (receipt.changesInMs === null) return;
    setTimeout(() => {
      // Replaced meanwhile (the message came again): that copy keeps its own time.
      if (!node.isConnected) return;
      const next = receiptOf(ask, { agent, now: Date.now(), waitMs });
      if (next) render(next);
    }, receipt.changesInMs);
  };
  render(first);
  return node;
}
