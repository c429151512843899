// @ts-check
// An Ask block: ONE form for all its questions while pending (answered by one RespondToAsk,
// or declined by DeclineAsk), a read-only view with its outcome once closed. Every string
// from the agent (or another person) goes in as text.

import { h, timeNode, uid } from "./dom.js";

// The Connect-JSON shapes read here (proto3 JSON: any field may be absent; an enum may come as
// its name or its number; Timestamps are RFC 3339 strings).
/**
 * @typedef {{id?: string, label?: string, description?: string, preview?: string}} Option
 * @typedef {object} Question
 * @property {string} [questionId]
 * @property {string} [question]
 * @property {string} [header]
 * @property {Option[]} [options]
 * @property {boolean} [allowMultiple]
 * @property {number | null} [recommended]
 * @property {string[]} [chosenOptionIds]
 * @property {string} [customText]
 * @property {boolean} [timedOut]
 * @typedef {object} Ask
 * @property {string} [askId]
 * @property {Question[]} [questions]
 * @property {string | number} [status]
 * @property {string} [answeredByAccountId]
 * @property {string} [answeredAt]
 * @property {string} [answeredByName]
 * @property {string} [deadline]
 * @property {string | number} [onTimeout]
 * @property {string} [closedByAccountId]
 * @property {string} [closedAt]
 * @property {string} [closedByName]
 * @property {string} [closeReason]
 * @typedef {{questionId: string, chosenOptionIds: string[], customText: string}} Answer
 *   One AskQuestionAnswer of a RespondToAsk request.
 * @typedef {{chosen: Set<string>, text: string}} QuestionDraft
 * @typedef {{question: Question, chosen: string[], text: string}} UnsentAnswer
 * @typedef {import("./connect.js").Violation} Violation
 * @typedef {{code?: unknown, message?: unknown, violations?: unknown, closedAsk?: Ask | null}} SendError
 *   What a failed submit or decline rejects with (an RpcError, or anything else thrown).
 */

/** The AskStatus names, as Connect-JSON sends them. */
export const STATUS = Object.freeze({
  PENDING: "ASK_STATUS_PENDING",
  ANSWERED: "ASK_STATUS_ANSWERED",
  DECLINED: "ASK_STATUS_DECLINED",
  WITHDRAWN: "ASK_STATUS_WITHDRAWN",
  TIMED_OUT: "ASK_STATUS_TIMED_OUT",
  EXPIRED: "ASK_STATUS_EXPIRED",
});

// Connect-JSON may also carry an enum as its number.
const STATUS_BY_NUMBER = [
  "ASK_STATUS_UNSPECIFIED",
  STATUS.PENDING,
  STATUS.ANSWERED,
  STATUS.DECLINED,
  STATUS.WITHDRAWN,
  STATUS.TIMED_OUT,
  STATUS.EXPIRED,
];

const PICK_RECOMMENDED = "ASK_TIMEOUT_POLICY_PICK_RECOMMENDED";

/**
 * Whether the server recorded an answer (by a person or a timeout).
 * @param {Ask} ask
 */
export function isAnswered(ask) {
  return Boolean(ask.answeredAt || ask.answeredByAccountId);
}

/** The ask's status name. Unset (an older server): ANSWERED once an answer is stored, else
 * PENDING. A name this page does not know is final too (every status but PENDING is). */
/**
 * @param {Ask} ask
 * @returns {string}
 */
export function askStatus(ask) {
  let status = ask.status;
  if (typeof status === "number") status = STATUS_BY_NUMBER[status] ?? `ASK_STATUS_${status}`;
  if (typeof status === "string" && status && status !== "ASK_STATUS_UNSPECIFIED" && status !== STATUS.PENDING) {
    return status;
  }
  return isAnswered(ask) ? STATUS.ANSWERED : STATUS.PENDING;
}

/** @param {Ask} ask */
export function isFinal(ask) {
  return askStatus(ask) !== STATUS.PENDING;
}

/**
 * @param {Ask} ask
 * @param {string} fallback
 */
function closerName(ask, fallback) {
  return ask.closedByName || ask.closedByAccountId || fallback;
}

/**
 * How the ask ended, as the start of a sentence ("This ask was declined by Grace").
 * @param {Ask} ask
 */
export function closedPhrase(ask) {
  switch (askStatus(ask)) {
    case STATUS.ANSWERED:
      return "This ask has already been answered";
    case STATUS.DECLINED:
      return `This ask was declined by ${closerName(ask, "another participant")}`;
    case STATUS.WITHDRAWN:
      return "The agent withdrew this ask";
    case STATUS.TIMED_OUT:
      return "This ask timed out and the agent picked the answers itself";
    case STATUS.EXPIRED:
      return "This ask expired";
    default:
      return "This ask was closed";
  }
}

/**
 * The note shown when the ask closed while the person had entered something.
 * @param {Ask} ask
 */
export function interruptedNote(ask) {
  /** @type {Record<string, string>} */
  const leads = {
    [STATUS.ANSWERED]: "This ask was answered",
    [STATUS.DECLINED]: "This ask was declined",
    [STATUS.WITHDRAWN]: "The agent withdrew this ask",
    [STATUS.TIMED_OUT]: "This ask timed out",
    [STATUS.EXPIRED]: "This ask expired",
  };
  const lead = leads[askStatus(ask)] ?? "This ask was closed";
  return `${lead} while you were filling it in; your answers were not sent.`;
}

/**
 * Milliseconds since the epoch for an RFC 3339 timestamp (any fraction length), or NaN.
 * @param {unknown} text
 */
export function parseTimestamp(text) {
  if (typeof text !== "string" || !text) return Number.NaN;
  // Protobuf JSON may carry up to 9 fractional digits; Date.parse wants at most 3.
  return Date.parse(text.replace(/(\.\d{3})\d+/, "$1"));
}

/**
 * "1:23", "1:02:03", "2 d 3:04:05" for a number of whole seconds.
 * @param {number} seconds
 */
export function formatRemaining(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const days = Math.floor(s / 86400);
  const hours = Math.floor((s % 86400) / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  const secs = String(s % 60).padStart(2, "0");
  if (days) return `${days} d ${hours}:${String(minutes).padStart(2, "0")}:${secs}`;
  if (hours) return `${hours}:${String(minutes).padStart(2, "0")}:${secs}`;
  return `${minutes}:${secs}`;
}

/**
 * The countdown's words `remaining` whole seconds before the deadline (<= 0: time is up),
 * under the ask's timeout policy (PICK_RECOMMENDED by name or number, else it expires), and
 * its state for styling: "running", "soon" (the last minute) or "up".
 * @param {number} remaining
 * @param {string | number} policy
 */
export function countdownText(remaining, policy) {
  const up = remaining <= 0;
  const pick = policy === PICK_RECOMMENDED || policy === 1;
  const clock = up ? "Time is up" : `Answer within ${formatRemaining(remaining)}`;
  let then;
  if (up) then = pick ? " — the agent picks the recommended option." : " — the ask expires.";
  else then = pick ? " — then the agent picks the recommended option." : " — then the ask expires.";
  const state = up ? "up" : remaining <= 60 ? "soon" : "running";
  return { clock, then, state };
}

// One timer for every countdown on the page; an updater returning false is done.
/** @type {Set<() => boolean>} */
const ticking = new Set();
/** @type {ReturnType<typeof setInterval> | null} */
let ticker = null;

/** @param {() => boolean} update */
function track(update) {
  if (update() === false) return;
  ticking.add(update);
  ticker ??= setInterval(() => {
    for (const each of ticking) if (each() === false) ticking.delete(each);
    if (!ticking.size) {
      clearInterval(ticker ?? undefined);
      ticker = null;
    }
  }, 250);
}

/** "Answer within 1:23 — then …" for a pending ask with a deadline; live until it is up. */
class Countdown {
  constructor() {
    this.clock = h("strong", { class: "countdown" });
    this.then = h("span", { class: "countdown-then" });
    this.node = h("p", { class: "ask-deadline", hidden: true }, this.clock, this.then);
    this.deadline = Number.NaN;
    /** @type {string | number} */
    this.policy = "";
    this.tracked = false;
    this.seenConnected = false;
  }

  /** @param {Ask} ask */
  set(ask) {
    this.deadline = parseTimestamp(ask.deadline);
    this.policy = ask.onTimeout ?? "";
    this.node.hidden = Number.isNaN(this.deadline);
    if (this.node.hidden) return;
    const at = new Date(this.deadline);
    this.node.title = `Deadline: ${at.toString()}`;
    if (this.tracked) this.update();
    else {
      this.tracked = true;
      track(() => this.update());
    }
  }

  update() {
    if (this.node.isConnected) this.seenConnected = true;
    else if (this.seenConnected || Number.isNaN(this.deadline)) {
      this.tracked = false;
      return false; // the form left the page
    }
    const remaining = Math.ceil((this.deadline - Date.now()) / 1000);
    const { clock, then, state } = countdownText(remaining, this.policy);
    if (this.clock.textContent !== clock) this.clock.textContent = clock;
    if (this.then.textContent !== then) this.then.textContent = then;
    this.node.dataset.state = state;
    if (state === "up") {
      this.tracked = false;
      return false;
    }
    return true;
  }
}

/**
 * The ask's questions without answer state: equal signatures render the same form.
 * @param {Ask} ask
 */
export function questionSignature(ask) {
  return JSON.stringify(
    (ask.questions ?? []).map((q) => [
      q.questionId ?? "",
      q.question ?? "",
      q.header ?? "",
      q.allowMultiple ?? false,
      q.recommended ?? null,
      (q.options ?? []).map((o) => [o.id ?? "", o.label ?? "", o.description ?? "", o.preview ?? ""]),
    ]),
  );
}

/**
 * The index of the recommended option, or -1 when unset or out of range (no mark then).
 * @param {Question} question
 */
export function recommendedIndex(question) {
  const index = question.recommended;
  const count = (question.options ?? []).length;
  return typeof index === "number" && Number.isInteger(index) && index >= 0 && index < count ? index : -1;
}

/**
 * "1 question", "2 questions".
 * @param {number} count
 * @param {string} one
 * @param {string} many
 */
export function plural(count, one, many) {
  return `${count} ${count === 1 ? one : many}`;
}

/**
 * What to call a question in a sentence: its text, else its header, else its id.
 * @param {Question} question
 */
export function questionTitle(question) {
  return question.question || question.header || question.questionId || "(untitled question)";
}


/**
 * Which part of a question a violation is about: "text" (its free text), "choice" (its
 * chosen options) or null (the question as a whole, or not said).
 * @param {Violation | null | undefined} violation
 * @returns {"text" | "choice" | null}
 */
export function violationPart(violation) {
  const part = /^answers\[\d+\]\.(custom_text|customText|chosen_option_ids|chosenOptionIds)\b/.exec(violation?.field ?? "");
  if (!part) return null;
  return part[1].startsWith("custom") ? "text" : "choice";
}

/**
 * The question a field violation is about, as its index in `questionIds` (the form's
 * questions in order), or -1 for the form as a whole. The question id travels with the
 * violation (compass.v1.InvalidFields); a violation of one answer without it (an older
 * server) is placed by its `answers[i]` path.
 * @param {Violation} violation
 * @param {string[]} questionIds
 */
export function violationQuestion(violation, questionIds) {
  if (violation.questionId) return questionIds.indexOf(violation.questionId);
  const indexed = /^answers\[(\d+)\]/.exec(violation.field ?? "");
  if (!indexed) return -1;
  const index = Number(indexed[1]);
  return index < questionIds.length ? index : -1;
}

/**
 * A violation's text without the `question "<id>": ` the server starts it with: the UI shows
 * it under that question already.
 * @param {Violation} violation
 */
export function violationText(violation) {
  const text = violation.description || violation.field;
  const named = violation.questionId ? `question ${JSON.stringify(violation.questionId)}: ` : "";
  return named && text.startsWith(named) ? text.slice(named.length) : text;
}

/**
 * Whether an answer says nothing (no pick, no text): it is sent as a skip.
 * @param {Answer} answer
 */
export function isSkipped(answer) {
  return !answer.chosenOptionIds.length && !answer.customText;
}

/**
 * Whether the stored answer of `ask` is exactly `answers` (same picks in any order, same
 * text, for every question), so that nothing entered is lost.
 * @param {Ask} ask
 * @param {Answer[]} answers
 */
export function answersMatch(ask, answers) {
  const stored = new Map((ask.questions ?? []).map((q) => [q.questionId ?? "", q]));
  return answers.every((answer) => {
    const q = stored.get(answer.questionId);
    if (!q) return false;
    const chosen = [...(q.chosenOptionIds ?? [])].sort();
    const mine = [...answer.chosenOptionIds].sort();
    return (q.customText ?? "") === answer.customText && JSON.stringify(chosen) === JSON.stringify(mine);
  });
}

/**
 * The primary button's label: how many questions go as skipped, unless all do (the form is
 * untouched: the button then refuses, see AskForm.send).
 * @param {number} skipped
 * @param {number} total
 */
export function sendLabel(skipped, total) {
  return skipped && skipped !== total ? `Send answers (${skipped} skipped)` : "Send answers";
}

/**
 * The skip notice for `skippedTitles` (the titles of the questions left empty) out of
 * `total` questions: its bold lead and the question names, or null when nothing is skipped.
 * @param {string[]} skippedTitles
 * @param {number} total
 * @returns {{lead: string, names: string} | null}
 */
export function skipNotice(skippedTitles, total) {
  if (skippedTitles.length === 0) return null;
  if (skippedTitles.length === total) {
    return {
      lead: total === 1
        ? "Nothing entered yet: answer the question, or skip it."
        : "Nothing entered yet: answer at least one question, or skip them all.",
      names: "",
    };
  }
  return {
    lead: `${plural(skippedTitles.length, "question", "questions")} left empty will be sent as skipped: `,
    names: skippedTitles.map((title) => `“${title}”`).join(", "),
  };
}

/**
 * The line by the send button for a refused RespondToAsk with `code` (field violations, when
 * there are some, are shown next to their questions).
 * @param {string} code
 * @param {string} message
 * @param {boolean} hasFieldErrors
 */
export function describeSendError(code, message, hasFieldErrors) {
  switch (code) {
    case "invalid_argument":
      return hasFieldErrors
        ? "Some answers were not accepted; see the notes next to them."
        : `The answers were not accepted: ${message}`;
    case "failed_precondition":
      return `This ask was closed, so your answers were not sent: ${message}`;
    case "not_found":
      return "This ask is no longer available to you.";
    case "permission_denied":
      return `You may not answer this ask: ${message}`;
    case "unauthenticated":
      return "Your token is no longer accepted. Your answers are kept here; sign in again to send them.";
    case "unavailable":
    case "deadline_exceeded":
    case "aborted":
      return "The server could not take your answers right now. They are kept here; try again.";
    default:
      return "Something went wrong while sending. Your answers are kept here; try again.";
  }
}

/**
 * The words for a refused DeclineAsk.
 * @param {SendError | null | undefined} error
 */
export function describeDeclineError(error) {
  const code = errorCode(error);
  if (code === "failed_precondition" && error?.closedAsk && isFinal(error.closedAsk)) {
    return `${closedPhrase(error.closedAsk)}, so it was not declined.`;
  }
  if (code === "unauthenticated") return "Your token is no longer accepted; sign in again to decline.";
  if (["unavailable", "deadline_exceeded", "aborted"].includes(code)) {
    return "The server could not be reached; the ask was not declined. Try again.";
  }
  return `The ask was not declined: ${typeof error?.message === "string" ? error.message : "something went wrong"}`;
}

/**
 * The Connect code of what a send rejected with ("unknown" for anything but an RpcError).
 * @param {SendError | null | undefined} error
 */
function errorCode(error) {
  return error && typeof error.code === "string" ? error.code : "unknown";
}

/**
 * The ask as stored when `error` says the send found it closed, else null.
 * @param {SendError | null | undefined} error
 */
function closedAskOf(error) {
  const closed = error?.closedAsk;
  return errorCode(error) === "failed_precondition" && closed && isFinal(closed) ? closed : null;
}

/**
 * For each option of a rebuilt question, whether it is ticked again from the draft: the
 * saved picks by option id, except that a single-select question with more than one of them
 * (its options changed) gets none.
 * @param {string[]} optionIds
 * @param {Set<string>} chosen
 * @param {boolean} multiple
 */
export function restoredChoice(optionIds, chosen, multiple) {
  const ticked = optionIds.map((id) => chosen.has(id));
  if (!multiple && ticked.filter(Boolean).length > 1) return ticked.map(() => false);
  return ticked;
}

/**
 * The labels of the chosen options (an id without an option stays as it is).
 * @param {Question} question
 * @param {string[]} ids
 */
export function chosenLabels(question, ids) {
  const labels = new Map((question.options ?? []).map((o) => [o.id ?? "", o.label ?? ""]));
  return ids.map((id) => labels.get(id) ?? id);
}

/**
 * @typedef {object} QuestionEntry One question of a pending form.
 * @property {Question} question
 * @property {HTMLFieldSetElement} fieldset
 * @property {HTMLInputElement[]} inputs
 * @property {HTMLTextAreaElement} other
 * @property {HTMLButtonElement | null} clear
 * @property {HTMLElement} violation
 * @property {boolean} multiple
 */

/** The pending form of one ask. `submit(askId, answers)` sends them and `decline(askId,
 * reason)` declines the ask; both reject with RpcError (one refused because the ask closed
 * meanwhile may carry that ask as `closedAsk`). */
export class AskForm {
  /**
   * @param {Ask} ask
   * @param {{submit: (askId: string, answers: Answer[]) => Promise<void>,
   *   decline: (askId: string, reason: string) => Promise<void>}} actions
   */
  constructor(ask, { submit, decline }) {
    this.ask = ask;
    this.signature = questionSignature(ask);
    this.submitAnswers = submit;
    this.declineAsk = decline;
    this.busy = false;
    this.declined = false; // this person declined it here: no "not sent" note then
    /** @type {string | null} */
    this.closedOutcome = null; // set when a send found the ask closed
    this.countdown = new Countdown();
    // Built by buildDecline():
    /** @type {HTMLButtonElement} */ this.declineButton;
    /** @type {HTMLSpanElement} */ this.declineDraftWarning;
    /** @type {HTMLTextAreaElement} */ this.declineReason;
    /** @type {HTMLParagraphElement} */ this.declineError;
    /** @type {HTMLButtonElement} */ this.declineConfirm;
    /** @type {HTMLButtonElement} */ this.declineCancel;
    /** @type {HTMLDivElement} */ this.declinePanel;
    this.questions = (ask.questions ?? []).map((question, index) => this.buildQuestion(question, index));
    this.skipNotice = h("p", { class: "skip-notice", role: "status", "aria-live": "polite" });
    this.nothingEnteredShown = false; // the form error says the form is empty
    this.formError = h("p", { class: "form-error", role: "alert", hidden: true });
    this.button = h("button", { type: "submit", class: "button button-primary" }, "Send answers");
    // Skipping every question is a choice of its own, never what the primary button does on
    // an untouched form.
    this.skipAllButton = h("button", { type: "button", class: "button button-quiet skip-all", hidden: true }, "Skip all questions");
    this.skipAllButton.addEventListener("click", () => this.send({ skipAll: true }));
    this.buildDecline();
    this.node = h(
      "form",
      {
        class: "ask ask-pending",
        method: "post",
        novalidate: true,
        dataset: { askId: ask.askId ?? "" },
        "aria-label": plural(this.questions.length, "question from the agent", "questions from the agent"),
        onsubmit: (event) => {
          event.preventDefault();
          this.send();
        },
      },
      this.countdown.node,
      this.questions.map((q) => q.fieldset),
      h(
        "div",
        { class: "ask-footer" },
        this.skipNotice,
        this.formError,
        h("div", { class: "ask-actions" }, this.button, this.skipAllButton, this.declineButton),
        this.declinePanel,
      ),
    );
    this.countdown.set(ask);
    this.refresh();
  }

  /**
   * The same ask again (same questions): picks up a changed deadline.
   * @param {Ask} ask
   */
  update(ask) {
    this.ask = ask;
    this.countdown.set(ask);
  }

  /** "Decline…" opens an in-page confirmation saying what declining does, with an optional
   * reason; only its "Decline ask" button calls DeclineAsk. */
  buildDecline() {
    const titleId = uid("decline-title");
    const reasonId = uid("decline-reason");
    this.declineButton = h(
      "button",
      { type: "button", class: "button button-quiet decline-open", "aria-expanded": "false" },
      "Decline…",
    );
    this.declineButton.addEventListener("click", () => this.openDecline());
    this.declineDraftWarning = h("span", { class: "decline-draft", hidden: true }, " What you entered above is not sent.");
    this.declineReason = h("textarea", { id: reasonId, class: "decline-reason", rows: 2, maxlength: 500 });
    this.declineError = h("p", { class: "decline-error", role: "alert", hidden: true });
    this.declineConfirm = h("button", { type: "button", class: "button button-danger" }, "Decline ask");
    this.declineCancel = h("button", { type: "button", class: "button button-quiet" }, "Keep answering");
    this.declineConfirm.addEventListener("click", () => this.sendDecline());
    this.declineCancel.addEventListener("click", () => this.closeDecline());
    this.declinePanel = h(
      "div",
      { class: "decline-panel", role: "group", "aria-labelledby": titleId, hidden: true },
      h(
        "p",
        { class: "decline-warning", id: titleId },
        h("strong", {}, "Decline this ask?"),
        " The agent will be told you declined; its run stops.",
        this.declineDraftWarning,
      ),
      h("label", { for: reasonId }, "Reason (optional)"),
      this.declineReason,
      this.declineError,
      h("div", { class: "ask-actions" }, this.declineConfirm, this.declineCancel),
    );
    this.declinePanel.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && !this.busy) {
        event.preventDefault();
        this.closeDecline();
      }
    });
  }

  openDecline() {
    this.declineDraftWarning.hidden = !this.hasDraft();
    this.declineError.hidden = true;
    this.declinePanel.hidden = false;
    this.declineButton.setAttribute("aria-expanded", "true");
    this.declineButton.hidden = true;
    this.declineReason.focus();
  }

  closeDecline() {
    this.declinePanel.hidden = true;
    this.declineButton.hidden = false;
    this.declineButton.setAttribute("aria-expanded", "false");
    this.declineButton.focus();
  }

  async sendDecline() {
    if (this.busy) return;
    this.busy = true;
    this.declineError.hidden = true;
    this.setDisabled(true);
    try {
      this.declined = true;
      await this.declineAsk(this.ask.askId ?? "", this.declineReason.value.trim());
    } catch (caught) {
      this.declined = false;
      const error = /** @type {SendError | null | undefined} */ (caught);
      const closed = closedAskOf(error);
      if (closed) this.closedOutcome = askStatus(closed);
      this.declineError.textContent = describeDeclineError(error);
      this.declineError.hidden = false;
    } finally {
      this.busy = false;
      this.setDisabled(false);
    }
  }

  /** Disables the actions while a call is in flight, and for good once the ask is known to
   * be closed (the inputs stay as they are: nothing entered is taken away). */
  /** @param {boolean} busy */
  setDisabled(busy) {
    const off = busy || this.closedOutcome !== null;
    this.button.disabled = off;
    this.skipAllButton.disabled = off;
    this.declineButton.disabled = off;
    this.declineConfirm.disabled = off;
    if (busy) this.node.setAttribute("aria-busy", "true");
    else this.node.removeAttribute("aria-busy");
  }

  /**
   * @param {Question} question
   * @param {number} index
   * @returns {QuestionEntry}
   */
  buildQuestion(question, index) {
    const options = question.options ?? [];
    const multiple = Boolean(question.allowMultiple);
    const recommended = recommendedIndex(question);
    const groupName = uid("question");
    const violation = h("p", { class: "violation", role: "alert", id: uid("violation"), hidden: true });
    /** @type {HTMLInputElement[]} */
    const inputs = [];
    const optionNodes = options.map((option, optionIndex) => {
      const inputId = uid("option");
      const descriptionId = option.description ? uid("description") : null;
      const input = h("input", {
        type: multiple ? "checkbox" : "radio",
        id: inputId,
        name: groupName,
        value: option.id ?? "",
        "aria-describedby": descriptionId,
      });
      input.addEventListener("change", () => this.picked(entry, input));
      input.addEventListener("keydown", (event) => {
        // Enter picks, like Space (a browser would otherwise submit the form or do nothing).
        if (event.key !== "Enter") return;
        event.preventDefault();
        input.checked = multiple ? !input.checked : true;
        input.dispatchEvent(new Event("change", { bubbles: true }));
      });
      inputs.push(input);
      const isRecommended = optionIndex === recommended;
      return h(
        "div",
        { class: isRecommended ? "option option-recommended" : "option" },
        input,
        h(
          "label",
          { for: inputId },
          h("span", { class: "option-label" }, option.label ?? ""),
          isRecommended ? h("span", { class: "badge" }, "Recommended") : null,
        ),
        descriptionId ? h("p", { class: "option-description", id: descriptionId }, option.description) : null,
        option.preview
          ? h("details", { class: "preview" }, h("summary", {}, "Preview"), h("pre", {}, option.preview))
          : null,
      );
    });
    const otherId = uid("other");
    const otherHintId = uid("other-hint");
    const other = h("textarea", {
      id: otherId,
      class: "other-input",
      rows: 2,
      "aria-describedby": `${otherHintId} ${violation.id}`,
    });
    other.addEventListener("input", () => this.typed(entry));
    let hint = "Answer in your own words.";
    if (options.length && multiple) hint = "Optional, alongside the options you tick.";
    else if (options.length) hint = "Typing here replaces the choice above.";
    const clear = multiple || !options.length
      ? null
      : h("button", { type: "button", class: "button button-quiet clear-choice", hidden: true }, "Clear choice");
    clear?.addEventListener("click", () => {
      for (const input of inputs) input.checked = false;
      this.refresh();
      other.focus();
    });
    let instruction = "Answer in your own words.";
    if (options.length) instruction = multiple ? "Choose any that apply." : "Choose one.";
    const fieldset = h(
      "fieldset",
      { class: "question", dataset: { questionId: question.questionId ?? "", questionIndex: index } },
      h(
        "legend",
        {},
        question.header ? h("span", { class: "chip" }, question.header) : null,
        h("span", { class: "question-text" }, question.question ?? ""),
      ),
      options.length ? h("p", { class: "instruction" }, instruction) : null,
      options.length ? h("div", { class: "options" }, optionNodes) : null,
      clear,
      h(
        "div",
        { class: "other" },
        h("label", { for: otherId }, options.length ? "Other" : "Your answer"),
        other,
        h("p", { class: "other-hint", id: otherHintId }, hint),
      ),
      violation,
    );
    /** @type {QuestionEntry} */
    const entry = { question, fieldset, inputs, other, clear, violation, multiple };
    return entry;
  }

  /**
   * @param {QuestionEntry} entry
   * @param {HTMLInputElement} input
   */
  picked(entry, input) {
    // Single-select: free text is instead of a pick, so a pick clears it (SPEC §4 step 6).
    if (!entry.multiple && input.checked) entry.other.value = "";
    this.refresh();
  }

  /** @param {QuestionEntry} entry */
  typed(entry) {
    if (!entry.multiple && entry.other.value.trim() !== "") {
      for (const input of entry.inputs) input.checked = false;
    }
    this.refresh();
  }

  /**
   * One entry per question, in question order (the server's answers[i] is question i).
   * @returns {Answer[]}
   */
  answers() {
    return this.questions.map((q) => ({
      questionId: q.question.questionId ?? "",
      chosenOptionIds: q.inputs.filter((input) => input.checked).map((input) => input.value),
      customText: q.other.value.trim(),
    }));
  }

  skipped() {
    return this.answers()
      .map((answer, index) => ({ answer, entry: this.questions[index] }))
      .filter(({ answer }) => isSkipped(answer))
      .map(({ entry }) => entry);
  }

  refresh() {
    // "Answer at least one question first" is about an empty form: once something is
    // entered it no longer holds, and a stale error beside a filled form confuses.
    if (this.nothingEnteredShown && this.hasDraft()) {
      this.nothingEnteredShown = false;
      this.clearErrors();
    }
    const skipped = new Set(this.skipped());
    for (const entry of this.questions) {
      entry.fieldset.classList.toggle("is-empty", skipped.has(entry));
      if (entry.clear) entry.clear.hidden = !entry.inputs.some((input) => input.checked);
    }
    const total = this.questions.length;
    const untouched = skipped.size === total;
    this.skipAllButton.hidden = !untouched;
    this.button.textContent = sendLabel(skipped.size, total);
    if (untouched) this.button.setAttribute("aria-describedby", this.skipNotice.id || (this.skipNotice.id = uid("skip")));
    else this.button.removeAttribute("aria-describedby");
    const notice = skipNotice([...skipped].map((entry) => questionTitle(entry.question)), total);
    if (!notice) {
      this.skipNotice.replaceChildren();
      this.skipNotice.hidden = true;
      return;
    }
    const { lead, names } = notice;
    // Rewrite the live region only when its words change, so screen readers are not told
    // the same thing at every keystroke.
    if (!this.skipNotice.hidden && this.skipNotice.textContent === lead + names) return;
    this.skipNotice.hidden = false;
    this.skipNotice.replaceChildren(h("strong", {}, lead), names);
  }

  /** Whether the person entered anything. */
  hasDraft() {
    return this.skipped().length < this.questions.length;
  }

  /**
   * What the person entered, by question id, to carry into a rebuilt form.
   * @returns {Map<string, QuestionDraft>}
   */
  draft() {
    /** @type {Map<string, QuestionDraft>} */
    const draft = new Map();
    for (const entry of this.questions) {
      draft.set(entry.question.questionId ?? "", {
        chosen: new Set(entry.inputs.filter((i) => i.checked).map((i) => i.value)),
        text: entry.other.value,
      });
    }
    return draft;
  }

  /** @param {Map<string, QuestionDraft>} draft */
  restore(draft) {
    for (const entry of this.questions) {
      const saved = draft.get(entry.question.questionId ?? "");
      if (!saved) continue;
      const ticked = restoredChoice(entry.inputs.map((input) => input.value), saved.chosen, entry.multiple);
      entry.inputs.forEach((input, index) => {
        input.checked = ticked[index];
      });
      entry.other.value = saved.text;
    }
    this.refresh();
  }

  /**
   * Whether `ask`'s stored answer is exactly what this form holds (then nothing is lost).
   * @param {Ask} ask
   */
  matches(ask) {
    return answersMatch(ask, this.answers());
  }

  /**
   * Sends the answers. With nothing entered, only the explicit "Skip all questions" sends
   * (`skipAll`); the primary button then says what to do instead.
   * @param {{skipAll?: boolean}} [options]
   */
  async send({ skipAll = false } = {}) {
    if (this.busy) return;
    this.clearErrors();
    if (!skipAll && !this.hasDraft()) {
      this.formError.replaceChildren(
        this.questions.length === 1
          ? "Answer the question first, or choose “Skip all questions”."
          : "Answer at least one question first, or choose “Skip all questions”.",
      );
      this.formError.hidden = false;
      this.nothingEnteredShown = true;
      this.questions[0]?.fieldset.querySelector(/** @type {"input"} */ ("input, textarea"))?.focus();
      return;
    }
    this.busy = true;
    this.setDisabled(true);
    try {
      await this.submitAnswers(this.ask.askId ?? "", this.answers());
    } catch (error) {
      this.showError(error);
    } finally {
      this.busy = false;
      this.setDisabled(false);
    }
  }

  /**
   * What the person entered, question by question, for showing read-only once the ask
   * closed without it (only the questions they filled in).
   * @returns {UnsentAnswer[]}
   */
  unsent() {
    return this.questions
      .map((entry) => ({
        question: entry.question,
        chosen: chosenLabels(entry.question, entry.inputs.filter((i) => i.checked).map((i) => i.value)),
        text: entry.other.value.trim(),
      }))
      .filter((item) => item.chosen.length || item.text);
  }

  clearErrors() {
    this.formError.hidden = true;
    this.formError.replaceChildren();
    for (const entry of this.questions) {
      entry.violation.hidden = true;
      entry.violation.replaceChildren();
      entry.fieldset.classList.remove("has-violation");
      entry.other.removeAttribute("aria-invalid");
      for (const input of entry.inputs) input.removeAttribute("aria-invalid");
    }
  }

  /**
   * Shows an RpcError: field violations next to their question, the rest above the button.
   * Nothing the person entered is touched.
   * @param {unknown} caught
   */
  showError(caught) {
    const error = /** @type {SendError | null | undefined} */ (caught);
    const code = errorCode(error);
    /** @type {Violation[]} */
    const violations = Array.isArray(error?.violations) ? error.violations : [];
    /** @type {string[]} */
    const general = [];
    /** @type {Map<QuestionEntry, string[]>} */
    const byQuestion = new Map();
    const ids = this.questions.map((entry) => entry.question.questionId ?? "");
    for (const violation of violations) {
      const target = this.questions[violationQuestion(violation, ids)];
      if (!target) {
        general.push(violation.description || violation.field);
        continue;
      }
      byQuestion.set(target, [...(byQuestion.get(target) ?? []), violationText(violation)]);
      // Only the part at fault is marked: a choice error never outlines the "Other" box.
      const part = violationPart(violation);
      if (part === "text") target.other.setAttribute("aria-invalid", "true");
      if (part === "choice") for (const input of target.inputs) input.setAttribute("aria-invalid", "true");
    }
    for (const [entry, messages] of byQuestion) {
      entry.violation.replaceChildren(...messages.flatMap((m, i) => (i ? [h("br"), m] : [m])));
      entry.violation.hidden = false;
      entry.fieldset.classList.add("has-violation");
    }
    // Always a line by the button too: the question at fault may be scrolled out of view.
    const closed = closedAskOf(error);
    if (closed) this.closedOutcome = askStatus(closed);
    const message = typeof error?.message === "string" ? error.message : "";
    const lead = closed
      ? `${closedPhrase(closed)}, so your answers were not sent.`
      : describeSendError(code, message, byQuestion.size > 0);
    this.formError.replaceChildren(lead, ...general.flatMap((m) => [h("br"), m]));
    this.formError.hidden = false;
  }
}

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
  return h("bdi", props, text);
}

/**
 * Who closed it and when, as one line.
 * @param {Ask} ask
 * @param {string} status
 */
function closedByLine(ask, status) {
  /** @param {string | undefined} stamp */
  const at = (stamp) => timeNode(stamp ?? "");
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
 * sent (from AskForm.unsent()), shown so it is not lost.
 * @param {Ask} ask
 * @param {{note?: string, unsent?: UnsentAnswer[]}} [extra]
 */
export function closedView(ask, { note = "", unsent = [] } = {}) {
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
        question.header ? h("span", { class: "chip" }, question.header) : null,
        h("span", { class: "question-text" }, question.question ?? ""),
        question.timedOut
          ? h("span", { class: "badge badge-timeout", title: "Picked automatically when the time ran out" }, "Timed out")
          : null,
      ),
      chosen.length
        ? h(
            "ul",
            { class: "chosen", "aria-label": question.timedOut ? "Auto-selected" : "Chosen" },
            chosen.map((label) => h("li", {}, label)),
          )
        : null,
      text ? h("p", { class: "free-text-label" }, chosen.length || options.length ? "Other:" : "Answer:") : null,
      text ? h("blockquote", { class: "free-text" }, text) : null,
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
        h("p", { class: "answered-title" }, h("span", { class: "question-text" }, questionTitle(item.question))),
        item.chosen.length ? h("ul", { class: "chosen" }, item.chosen.map((label) => h("li", {}, label))) : null,
        item.text ? h("blockquote", { class: "free-text" }, item.text) : null,
      ),
    ),
  );
}
