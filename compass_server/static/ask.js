// An Ask block: ONE form for all its questions while pending (answered by one RespondToAsk,
// or declined by DeclineAsk), a read-only view with its outcome once closed. Every string
// from the agent (or another person) goes in as text.

import { h, timeNode, uid } from "./dom.js";

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

/** Whether the server recorded an answer (by a person or a timeout). */
export function isAnswered(ask) {
  return Boolean(ask.answeredAt || ask.answeredByAccountId);
}

/** The ask's status name. Unset (an older server): ANSWERED once an answer is stored, else
 * PENDING. A name this page does not know is final too (every status but PENDING is). */
export function askStatus(ask) {
  let status = ask.status;
  if (typeof status === "number") status = STATUS_BY_NUMBER[status] ?? `ASK_STATUS_${status}`;
  if (typeof status === "string" && status && status !== "ASK_STATUS_UNSPECIFIED" && status !== STATUS.PENDING) {
    return status;
  }
  return isAnswered(ask) ? STATUS.ANSWERED : STATUS.PENDING;
}

export function isFinal(ask) {
  return askStatus(ask) !== STATUS.PENDING;
}

function closerName(ask, fallback) {
  return ask.closedByName || ask.closedByAccountId || fallback;
}

/** How the ask ended, as the start of a sentence ("This ask was declined by Grace"). */
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

/** The note shown when the ask closed while the person had entered something. */
export function interruptedNote(ask) {
  const lead = {
    [STATUS.ANSWERED]: "This ask was answered",
    [STATUS.DECLINED]: "This ask was declined",
    [STATUS.WITHDRAWN]: "The agent withdrew this ask",
    [STATUS.TIMED_OUT]: "This ask timed out",
    [STATUS.EXPIRED]: "This ask expired",
  }[askStatus(ask)] ?? "This ask was closed";
  return `${lead} while you were filling it in; your answers were not sent.`;
}

/** Milliseconds since the epoch for an RFC 3339 timestamp (any fraction length), or NaN. */
export function parseTimestamp(text) {
  if (typeof text !== "string" || !text) return Number.NaN;
  // Protobuf JSON may carry up to 9 fractional digits; Date.parse wants at most 3.
  return Date.parse(text.replace(/(\.\d{3})\d+/, "$1"));
}

/** "1:23", "1:02:03", "2 d 3:04:05" for a number of whole seconds. */
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

// One timer for every countdown on the page; an updater returning false is done.
const ticking = new Set();
let ticker = null;

function track(update) {
  if (update() === false) return;
  ticking.add(update);
  ticker ??= setInterval(() => {
    for (const each of ticking) if (each() === false) ticking.delete(each);
    if (!ticking.size) {
      clearInterval(ticker);
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
    this.policy = "";
    this.tracked = false;
    this.seenConnected = false;
  }

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
    const up = remaining <= 0;
    const pick = this.policy === PICK_RECOMMENDED || this.policy === 1; // by name or number
    const clock = up ? "Time is up" : `Answer within ${formatRemaining(remaining)}`;
    let then;
    if (up) then = pick ? " — the agent picks the recommended option." : " — the ask expires.";
    else then = pick ? " — then the agent picks the recommended option." : " — then the ask expires.";
    if (this.clock.textContent !== clock) this.clock.textContent = clock;
    if (this.then.textContent !== then) this.then.textContent = then;
    this.node.dataset.state = up ? "up" : remaining <= 60 ? "soon" : "running";
    if (up) {
      this.tracked = false;
      return false;
    }
    return true;
  }
}

/** The ask's questions without answer state: equal signatures render the same form. */
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

/** The index of the recommended option, or -1 when unset or out of range (no mark then). */
export function recommendedIndex(question) {
  const index = question.recommended;
  const count = (question.options ?? []).length;
  return Number.isInteger(index) && index >= 0 && index < count ? index : -1;
}

function plural(count, one, many) {
  return `${count} ${count === 1 ? one : many}`;
}

function questionTitle(question) {
  return question.question || question.header || question.questionId || "(untitled question)";
}

/** A violation's text without the `question "<id>": ` the server starts it with: the UI shows
 * it under that question already. */
function withoutQuestionName(violation) {
  const text = violation.description || violation.field;
  const named = violation.questionId ? `question ${JSON.stringify(violation.questionId)}: ` : "";
  return named && text.startsWith(named) ? text.slice(named.length) : text;
}

/** Which part of a question a violation is about: "text" (its free text), "choice" (its
 * chosen options) or null (the question as a whole, or not said). */
export function violationPart(violation) {
  const part = /^answers\[\d+\]\.(custom_text|customText|chosen_option_ids|chosenOptionIds)\b/.exec(violation?.field ?? "");
  if (!part) return null;
  return part[1].startsWith("custom") ? "text" : "choice";
}

/** The pending form of one ask. `submit(askId, answers)` sends them and `decline(askId,
 * reason)` declines the ask; both reject with RpcError (one refused because the ask closed
 * meanwhile may carry that ask as `closedAsk`). */
export class AskForm {
  constructor(ask, { submit, decline }) {
    this.ask = ask;
    this.signature = questionSignature(ask);
    this.submitAnswers = submit;
    this.declineAsk = decline;
    this.busy = false;
    this.declined = false; // this person declined it here: no "not sent" note then
    this.closedOutcome = null; // set when a send found the ask closed
    this.countdown = new Countdown();
    this.questions = (ask.questions ?? []).map((question, index) => this.buildQuestion(question, index));
    this.skipNotice = h("p", { class: "skip-notice", role: "status", "aria-live": "polite" });
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

  /** The same ask again (same questions): picks up a changed deadline. */
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
    } catch (error) {
      this.declined = false;
      const code = error && typeof error.code === "string" ? error.code : "unknown";
      let text;
      if (code === "failed_precondition" && error.closedAsk && isFinal(error.closedAsk)) {
        text = `${closedPhrase(error.closedAsk)}, so it was not declined.`;
        this.closedOutcome = askStatus(error.closedAsk);
      } else if (code === "unauthenticated") {
        text = "Your token is no longer accepted; sign in again to decline.";
      } else if (["unavailable", "deadline_exceeded", "aborted"].includes(code)) {
        text = "The server could not be reached; the ask was not declined. Try again.";
      } else {
        text = `The ask was not declined: ${error?.message ?? "something went wrong"}`;
      }
      this.declineError.textContent = text;
      this.declineError.hidden = false;
    } finally {
      this.busy = false;
      this.setDisabled(false);
    }
  }

  /** Disables the actions while a call is in flight, and for good once the ask is known to
   * be closed (the inputs stay as they are: nothing entered is taken away). */
  setDisabled(busy) {
    const off = busy || this.closedOutcome !== null;
    this.button.disabled = off;
    this.skipAllButton.disabled = off;
    this.declineButton.disabled = off;
    this.declineConfirm.disabled = off;
    if (busy) this.node.setAttribute("aria-busy", "true");
    else this.node.removeAttribute("aria-busy");
  }

  buildQuestion(question, index) {
    const options = question.options ?? [];
    const multiple = Boolean(question.allowMultiple);
    const recommended = recommendedIndex(question);
    const groupName = uid("question");
    const violation = h("p", { class: "violation", role: "alert", id: uid("violation"), hidden: true });
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
    const entry = { question, fieldset, inputs, other, clear, violation, multiple };
    return entry;
  }

  picked(entry, input) {
    // Single-select: free text is instead of a pick, so a pick clears it (SPEC §4 step 6).
    if (!entry.multiple && input.checked) entry.other.value = "";
    this.refresh();
  }

  typed(entry) {
    if (!entry.multiple && entry.other.value.trim() !== "") {
      for (const input of entry.inputs) input.checked = false;
    }
    this.refresh();
  }

  /** One entry per question, in question order (the server's answers[i] is question i). */
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
      .filter(({ answer }) => !answer.chosenOptionIds.length && !answer.customText)
      .map(({ entry }) => entry);
  }

  refresh() {
    const skipped = new Set(this.skipped());
    for (const entry of this.questions) {
      entry.fieldset.classList.toggle("is-empty", skipped.has(entry));
      if (entry.clear) entry.clear.hidden = !entry.inputs.some((input) => input.checked);
    }
    const total = this.questions.length;
    const untouched = skipped.size === total;
    this.skipAllButton.hidden = !untouched;
    this.button.textContent = skipped.size && !untouched ? `Send answers (${skipped.size} skipped)` : "Send answers";
    if (untouched) this.button.setAttribute("aria-describedby", this.skipNotice.id || (this.skipNotice.id = uid("skip")));
    else this.button.removeAttribute("aria-describedby");
    if (skipped.size === 0) {
      this.skipNotice.replaceChildren();
      this.skipNotice.hidden = true;
      return;
    }
    let lead;
    let names = "";
    if (untouched) {
      lead = total === 1
        ? "Nothing entered yet: answer the question, or skip it."
        : "Nothing entered yet: answer at least one question, or skip them all.";
    } else {
      names = [...skipped].map((entry) => `“${questionTitle(entry.question)}”`).join(", ");
      lead = `${plural(skipped.size, "question", "questions")} left empty will be sent as skipped: `;
    }
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

  /** What the person entered, by question id, to carry into a rebuilt form. */
  draft() {
    const draft = new Map();
    for (const entry of this.questions) {
      draft.set(entry.question.questionId ?? "", {
        chosen: new Set(entry.inputs.filter((i) => i.checked).map((i) => i.value)),
        text: entry.other.value,
      });
    }
    return draft;
  }

  restore(draft) {
    for (const entry of this.questions) {
      const saved = draft.get(entry.question.questionId ?? "");
      if (!saved) continue;
      for (const input of entry.inputs) input.checked = saved.chosen.has(input.value);
      entry.other.value = saved.text;
      if (!entry.multiple && entry.inputs.filter((i) => i.checked).length > 1) {
        for (const input of entry.inputs) input.checked = false;
      }
    }
    this.refresh();
  }

  /** Whether `ask`'s stored answer is exactly what this form holds (then nothing is lost). */
  matches(ask) {
    const stored = new Map(
      (ask.questions ?? []).map((q) => [q.questionId ?? "", q]),
    );
    return this.answers().every((answer) => {
      const q = stored.get(answer.questionId);
      if (!q) return false;
      const chosen = [...(q.chosenOptionIds ?? [])].sort();
      const mine = [...answer.chosenOptionIds].sort();
      return (q.customText ?? "") === answer.customText && JSON.stringify(chosen) === JSON.stringify(mine);
    });
  }

  /** Sends the answers. With nothing entered, only the explicit "Skip all questions" sends
   * (`skipAll`); the primary button then says what to do instead. */
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
      this.questions[0]?.fieldset.querySelector("input, textarea")?.focus();
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

  /** What the person entered, question by question, for showing read-only once the ask
   * closed without it (only the questions they filled in). */
  unsent() {
    return this.questions
      .map((entry) => {
        const labels = new Map((entry.question.options ?? []).map((o) => [o.id ?? "", o.label ?? ""]));
        return {
          question: entry.question,
          chosen: entry.inputs.filter((i) => i.checked).map((i) => labels.get(i.value) ?? i.value),
          text: entry.other.value.trim(),
        };
      })
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

  /** Shows an RpcError: field violations next to their question, the rest above the button.
   * Nothing the person entered is touched. */
  showError(error) {
    const code = error && typeof error.code === "string" ? error.code : "unknown";
    const violations = Array.isArray(error?.violations) ? error.violations : [];
    const general = [];
    const byQuestion = new Map();
    for (const violation of violations) {
      const target = this.questionFor(violation);
      if (!target) {
        general.push(violation.description || violation.field);
        continue;
      }
      const text = withoutQuestionName(violation);
      byQuestion.set(target, [...(byQuestion.get(target) ?? []), text]);
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
    const closed = code === "failed_precondition" && error?.closedAsk && isFinal(error.closedAsk);
    if (closed) this.closedOutcome = askStatus(error.closedAsk);
    const lead = closed
      ? `${closedPhrase(error.closedAsk)}, so your answers were not sent.`
      : this.describe(code, error?.message ?? "", byQuestion.size > 0);
    this.formError.replaceChildren(lead, ...general.flatMap((m) => [h("br"), m]));
    this.formError.hidden = false;
  }

  describe(code, message, hasFieldErrors) {
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

  questionFor(violation) {
    // The question id travels with the violation (compass.v1.InvalidFields); a violation of
    // one answer without it (an older server) is placed by its answers[i] path.
    if (violation.questionId) {
      return this.questions.find((entry) => entry.question.questionId === violation.questionId) ?? null;
    }
    const indexed = /^answers\[(\d+)\]/.exec(violation.field ?? "");
    return indexed ? (this.questions[Number(indexed[1])] ?? null) : null;
  }

}

const OUTCOMES = {
  [STATUS.ANSWERED]: { label: "Answered", kind: "answered" },
  [STATUS.DECLINED]: { label: "Declined", kind: "declined" },
  [STATUS.WITHDRAWN]: { label: "Withdrawn by the agent", kind: "withdrawn" },
  [STATUS.TIMED_OUT]: { label: "Timed out: auto-answered", kind: "timed-out" },
  [STATUS.EXPIRED]: { label: "Expired", kind: "expired" },
};

/** Text someone else wrote (a name, a reason), isolated so right-to-left text cannot reorder
 * the sentence around it. */
function foreign(text, props = {}) {
  return h("bdi", props, text);
}

/** Who closed it and when, as one line. */
function closedByLine(ask, status) {
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
 * sent (from AskForm.unsent()), shown so it is not lost. */
export function closedView(ask, { note = "", unsent = [] } = {}) {
  const status = askStatus(ask);
  const outcome = OUTCOMES[status] ?? { label: "Closed", kind: "closed" };
  const answeredStatus = status === STATUS.ANSWERED || status === STATUS.TIMED_OUT;
  const questions = (ask.questions ?? []).map((question) => {
    const options = new Map((question.options ?? []).map((o) => [o.id ?? "", o.label ?? ""]));
    const chosen = (question.chosenOptionIds ?? []).map((id) => options.get(id) ?? id);
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
      text ? h("p", { class: "free-text-label" }, chosen.length || options.size ? "Other:" : "Answer:") : null,
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
