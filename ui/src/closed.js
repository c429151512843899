// @ts-check
// The read-only view of a closed Ask (any status but PENDING): its outcome, the answers, who
// or what closed it, when and why. Every string from the agent or another person goes in as
// text, alone in an isolated element (dom.js `untrusted`).

import { STATUS, askStatus, chosenLabels, closerName, plural, questionTitle } from "./ask.js";
import { RECEIPT_WAIT_MS, receiptView } from "./delivery.js";
import { h, timeNode, untrusted } from "./dom.js";

/**
 * @typedef {import("./ask.js").Ask} Ask
 * @typedef {import("./ask.js").UnsentAnswer} UnsentAnswer
 */


/** @type {Record<string, {label: string, kind: string}>} */
const OUTCOMES = {
  [STATUS.ANSWERED]: { label: "Answered", kind: "answered" },
  [STATUS.DECLINED]: { label: "Declined", kind: "declined" },
  [STATUS.WITHDRAWN]: { label: "Withdrawn by the agent", kind: "withdrawn" },
  [STATUS.TIMED_OUT]: { label: "Timed out: auto-answered", kind: "timed-out" },
  [STATUS.EXPIRED]: { label: "Expired", kind: "expired" },
};

/**
 * Text someone else wrote (a name, a reason), isolated so right-to-left text cannot reorder
 * the sentence around it.
 * @param {string} text
 * @param {import("./dom.js").Props} [props]
 */
function foreign(text, props = {}) {
  return untrusted("bdi", props, text);
}

/**
 * Who closed it and when, as one line.
 * @param {Ask} ask
 * @param {string} status
 */
function closedByLine(ask, status) {
  /** @param {import("./ask.js").Timestamp | undefined} stamp */
  const at = (stamp) => timeNode(stamp);
  switch (status) {
    case STATUS.ANSWERED:
      return h(
        "p",
        { class: "answered-by" },
        "Answered by ",
        h("strong", {}, foreign(ask.answeredByName || ask.answeredByAccountId || "someone")),
        " at ",
        at(ask.answeredAt),
      );
    case STATUS.DECLINED:
      return h(
        "p",
        { class: "closed-by" },
        "Declined by ",
        h("strong", {}, foreign(closerName(ask, "a participant"))),
        " at ",
        at(ask.closedAt),
      );
    case STATUS.WITHDRAWN:
      return h(
        "p",
        { class: "closed-by" },
        "Withdrawn by ",
        h("strong", {}, foreign(closerName(ask, "the agent"))),
        " (the agent) at ",
        at(ask.closedAt),
      );
    case STATUS.TIMED_OUT:
      return h(
        "p",
        { class: "closed-by" },
        "Nobody answered in time: ",
        h("strong", {}, foreign(closerName(ask, "the agent"))),
        " (the agent) picked the answers marked Timed out, at ",
        at(ask.closedAt || ask.answeredAt),
        ".",
      );
    case STATUS.EXPIRED:
      return h("p", { class: "closed-by" }, "Nobody answered before the deadline; the server closed it at ", at(ask.closedAt), ".");
    default:
      return h(
        "p",
        { class: "closed-by" },
        "Closed",
        ask.closedByName || ask.closedByAccountId ? [" by ", h("strong", {}, foreign(closerName(ask, "")))] : null,
        " at ",
        at(ask.closedAt),
      );
  }
}

/** The read-only view of a closed ask (any status but PENDING): its outcome, the questions
 * with whatever answer they got, who or what closed it and when, and the reason given.
 * `note`: optional text shown above it; `unsent`: what this person had entered but never
 * sent (from AskForm.unsent()), shown so it is not lost; `agent`: who asked (the message's
 * author), named by the delivery receipt (delivery.js), which is awaited `receiptWaitMs`.
 * @param {Ask} ask
 * @param {{note?: string, unsent?: UnsentAnswer[], agent?: string, receiptWaitMs?: number}} [extra]
 */
export function closedView(ask, { note = "", unsent = [], agent = "", receiptWaitMs = RECEIPT_WAIT_MS } = {}) {
  const status = askStatus(ask);
  const outcome = OUTCOMES[status] ?? { label: "Closed", kind: "closed" };
  const answeredStatus = status === STATUS.ANSWERED || status === STATUS.TIMED_OUT;
  const questions = (ask.questions ?? []).map((question) => {
    const options = question.options ?? [];
    const chosen = chosenLabels(question, question.chosenOptionIds ?? []);
    const text = question.customText ?? "";
    const empty = !chosen.length && !text;
    return h(
      "div",
      { class: "answered-question", dataset: { questionId: question.questionId ?? "" } },
      h(
        "p",
        { class: "answered-title" },
        question.header ? untrusted("span", { class: "chip" }, question.header) : null,
        untrusted("span", { class: "question-text" }, question.question ?? ""),
        question.timedOut
          ? h("span", { class: "badge badge-timeout", title: "Picked automatically when the time ran out" }, "Timed out")
          : null,
      ),
      chosen.length
        ? h(
            "ul",
            { class: "chosen", "aria-label": question.timedOut ? "Auto-selected" : "Chosen" },
            chosen.map((label) => untrusted("li", {}, label)),
          )
        : null,
      text ? h("p", { class: "free-text-label" }, chosen.length || options.length ? "Other:" : "Answer:") : null,
      text ? untrusted("blockquote", { class: "free-text" }, text) : null,
      empty ? h("p", { class: "skipped" }, answeredStatus ? "Skipped" : "Not answered") : null,
    );
  });
  const reason = ask.closeReason ?? "";
  return h(
    "section",
    {
      class: `ask ask-closed ask-${outcome.kind}`,
      dataset: { askId: ask.askId ?? "", status },
      "aria-label": `${outcome.label}: ${plural(questions.length, "question", "questions")} from the agent`,
    },
    h("p", { class: "ask-outcome" }, h("span", { class: "outcome-label" }, outcome.label)),
    // Right under the outcome: an answer is never seen without what became of it.
    receiptView(ask, { agent, waitMs: receiptWaitMs }),
    note ? h("p", { class: "notice" }, note) : null,
    questions,
    unsent.length ? unsentView(unsent) : null,
    closedByLine(ask, status),
    reason ? h("p", { class: "close-reason" }, "Reason: ", foreign(reason, { class: "close-reason-text" })) : null,
  );
}

/** @param {UnsentAnswer[]} unsent */
function unsentView(unsent) {
  return h(
    "div",
    { class: "unsent", role: "group", "aria-label": "Your answers, not sent" },
    h("p", { class: "unsent-title" }, "Your answers, not sent:"),
    unsent.map((item) =>
      h(
        "div",
        { class: "unsent-question", dataset: { unsentQuestionId: item.question.questionId ?? "" } },
        h("p", { class: "answered-title" }, untrusted("span", { class: "question-text" }, questionTitle(item.question))),
        item.chosen.length ? h("ul", { class: "chosen" }, item.chosen.map((label) => untrusted("li", {}, label))) : null,
        item.text ? untrusted("blockquote", { class: "free-text" }, item.text) : null,
      ),
    ),
  );
}
