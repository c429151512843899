// @ts-check
// The pending form of an Ask: ONE form for all its questions (answered by one RespondToAsk, or
// declined by DeclineAsk), with its live countdown. Every string from the agent goes in as
// text, alone in an isolated element (dom.js `untrusted`). Its rules and words are ask.js's.

import {
  answersMatch,
  askStatus,
  chosenLabels,
  closedAskOf,
  closedPhrase,
  countdownText,
  describeDeclineError,
  describeSendError,
  errorCode,
  isSkipped,
  millis,
  notWaitingText,
  plural,
  questionSignature,
  questionTitle,
  recommendedIndex,
  REQUIRED_SKIPPED,
  requiredSkipped,
  restoredChoice,
  sentenceText,
  sendLabel,
  skipNotice,
  violationPart,
  violationQuestion,
  violationText,
} from "./ask.js";
import { AskTimeoutPolicy } from "../gen/compass/v1/comms_pb.js";
import { h, sentence, uid, untrusted } from "./dom.js";
import { TEXT_INSTEAD_OF_PICKS_WARNING, answerFor, offersOther, otherHint, textHidesPicks } from "./freetext.js";

/**
 * @typedef {import("./ask.js").Ask} Ask
 * @typedef {import("./ask.js").Answer} Answer
 * @typedef {import("./ask.js").Question} Question
 * @typedef {import("./ask.js").QuestionDraft} QuestionDraft
 * @typedef {import("./ask.js").UnsentAnswer} UnsentAnswer
 * @typedef {import("./ask.js").Violation} Violation
 * @typedef {import("./ask.js").SendError} SendError
 */

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
    /** @type {import("../gen/compass/v1/comms_pb.js").AskTimeoutPolicy} */
    this.policy = AskTimeoutPolicy.UNSPECIFIED;
    this.tracked = false;
    this.seenConnected = false;
  }

  /** @param {Ask} ask */
  set(ask) {
    this.deadline = millis(ask.deadline);
    this.policy = ask.onTimeout;
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

/** "Its agent is not waiting right now…" while Ask.withdrawAt is set; live until it is up. */
class NotWaiting {
  constructor() {
    this.node = h("p", { class: "ask-not-waiting", role: "status", hidden: true });
    this.at = Number.NaN;
    this.tracked = false;
    this.seenConnected = false;
  }

  /** @param {Ask} ask */
  set(ask) {
    this.at = millis(ask.withdrawAt);
    this.node.hidden = Number.isNaN(this.at);
    if (this.node.hidden) return;
    this.node.title = `Withdrawn at ${new Date(this.at).toString()} unless the agent comes back`;
    if (this.tracked) this.update();
    else {
      this.tracked = true;
      track(() => this.update());
    }
  }

  update() {
    if (this.node.isConnected) this.seenConnected = true;
    else if (this.seenConnected || Number.isNaN(this.at)) {
      this.tracked = false;
      return false; // the form left the page, or its agent is back
    }
    const remaining = Math.ceil((this.at - Date.now()) / 1000);
    const text = notWaitingText(remaining);
    if (this.node.textContent !== text) this.node.textContent = text;
    if (remaining <= 0) {
      this.tracked = false;
      return false;
    }
    return true;
  }
}

/**
 * @typedef {object} QuestionEntry One question of a pending form.
 * @property {Question} question
 * @property {HTMLFieldSetElement} fieldset
 * @property {HTMLInputElement[]} inputs
 * @property {HTMLTextAreaElement | null} other its free-text box (none where the agent cannot
 *   receive free text)
 * @property {HTMLElement} warning says the agent will see only the text (INSTEAD_OF_PICKS)
 * @property {HTMLButtonElement | null} clear
 * @property {HTMLElement} violation
 * @property {boolean} multiple
 */

/**
 * What is typed in the question's free-text box ("" where it has none).
 * @param {QuestionEntry} entry
 */
function textOf(entry) {
  return entry.other?.value ?? "";
}

/**
 * The ids of the question's ticked options.
 * @param {QuestionEntry} entry
 */
function picksOf(entry) {
  return entry.inputs.filter((input) => input.checked).map((input) => input.value);
}

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
    this.notWaiting = new NotWaiting();
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
      this.notWaiting.node,
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
    this.notWaiting.set(ask);
    this.refresh();
  }

  /**
   * The same ask again (same questions): picks up a changed deadline, and whether its agent
   * is waiting.
   * @param {Ask} ask
   */
  update(ask) {
    this.ask = ask;
    this.countdown.set(ask);
    this.notWaiting.set(ask);
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
      this.declineError.replaceChildren(...sentence(describeDeclineError(error)));
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
          untrusted("span", { class: "option-label" }, option.label ?? ""),
          isRecommended ? h("span", { class: "badge" }, "Recommended") : null,
        ),
        descriptionId ? untrusted("p", { class: "option-description", id: descriptionId }, option.description) : null,
        option.preview
          ? h("details", { class: "preview" }, h("summary", {}, "Preview"), untrusted("pre", {}, option.preview))
          : null,
      );
    });
    const otherId = uid("other");
    const otherHintId = uid("other-hint");
    const warning = h("p", { class: "free-text-warning", id: uid("warning"), role: "status", hidden: true });
    const other = offersOther(question)
      ? h("textarea", {
          id: otherId,
          class: "other-input",
          rows: 2,
          "aria-describedby": `${otherHintId} ${warning.id} ${violation.id}`,
        })
      : null;
    other?.addEventListener("input", () => this.typed(entry));
    const clear = multiple || !options.length
      ? null
      : h("button", { type: "button", class: "button button-quiet clear-choice", hidden: true }, "Clear choice");
    clear?.addEventListener("click", () => {
      for (const input of inputs) input.checked = false;
      this.refresh();
      (other ?? inputs[0])?.focus();
    });
    let instruction = "Answer in your own words.";
    if (options.length) instruction = multiple ? "Choose any that apply." : "Choose one.";
    const fieldset = h(
      "fieldset",
      { class: "question", dataset: { questionId: question.questionId ?? "", questionIndex: index } },
      h(
        "legend",
        {},
        question.header ? untrusted("span", { class: "chip" }, question.header) : null,
        untrusted("span", { class: "question-text" }, question.question ?? ""),
        question.answerRequired ? h("span", { class: "required-tag" }, "answer needed") : null,
      ),
      options.length ? h("p", { class: "instruction" }, instruction) : null,
      options.length ? h("div", { class: "options" }, optionNodes) : null,
      clear,
      other
        ? h(
            "div",
            { class: "other" },
            h("label", { for: otherId }, options.length ? "Other" : "Your answer"),
            other,
            h("p", { class: "other-hint", id: otherHintId }, otherHint(question)),
          )
        : null,
      warning,
      violation,
    );
    /** @type {QuestionEntry} */
    const entry = { question, fieldset, inputs, other, warning, clear, violation, multiple };
    return entry;
  }

  /**
   * @param {QuestionEntry} entry
   * @param {HTMLInputElement} input
   */
  picked(entry, input) {
    // Single-select: free text is instead of a pick, so a pick clears it (docs/spec.md §4 step 6).
    if (!entry.multiple && input.checked && entry.other) entry.other.value = "";
    this.refresh();
  }

  /** @param {QuestionEntry} entry */
  typed(entry) {
    if (!entry.multiple && textOf(entry).trim() !== "") {
      for (const input of entry.inputs) input.checked = false;
    }
    this.refresh();
  }

  /**
   * One entry per question, in question order (the server's answers[i] is question i).
   * @returns {Answer[]}
   */
  answers() {
    return this.questions.map((q) => answerFor(q.question, picksOf(q), textOf(q)));
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
      // Filled in as it appears (a live region is read out when its words change), emptied
      // as it goes.
      const warn = textHidesPicks(entry.question, picksOf(entry).length, textOf(entry));
      if (warn !== entry.warning.hidden) continue;
      entry.warning.hidden = !warn;
      entry.warning.textContent = warn ? TEXT_INSTEAD_OF_PICKS_WARNING : "";
    }
    const total = this.questions.length;
    const untouched = skipped.size === total;
    // Skipping everything cannot reach an agent that needs some answers.
    this.skipAllButton.hidden = !untouched || this.questions.some((q) => q.question.answerRequired);
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
    if (!this.skipNotice.hidden && this.skipNotice.textContent === lead + sentenceText(names)) return;
    this.skipNotice.hidden = false;
    this.skipNotice.replaceChildren(h("strong", {}, lead), ...sentence(names));
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
        chosen: new Set(picksOf(entry)),
        text: textOf(entry),
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
      if (entry.other) entry.other.value = saved.text;
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
    const answers = this.answers();
    const missing = requiredSkipped(
      this.questions.map((q) => q.question),
      answers,
    );
    if (missing.length) {
      for (const index of missing) {
        const entry = this.questions[index];
        entry.violation.replaceChildren(REQUIRED_SKIPPED);
        entry.violation.hidden = false;
        entry.fieldset.classList.add("has-violation");
      }
      this.questions[missing[0]]?.fieldset.querySelector(/** @type {"input"} */ ("input, textarea"))?.focus();
      return;
    }
    this.busy = true;
    this.setDisabled(true);
    try {
      await this.submitAnswers(this.ask.askId ?? "", answers);
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
        chosen: chosenLabels(entry.question, picksOf(entry)),
        text: textOf(entry).trim(),
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
      entry.other?.removeAttribute("aria-invalid");
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
      if (part === "text") target.other?.setAttribute("aria-invalid", "true");
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
      ? sentence([...closedPhrase(closed), ", so your answers were not sent."])
      : [describeSendError(code, message, byQuestion.size > 0)];
    this.formError.replaceChildren(...lead, ...general.flatMap((m) => [h("br"), m]));
    this.formError.hidden = false;
  }
}
