// An Ask block: ONE form for all its questions while pending (answered by one RespondToAsk),
// a read-only summary once answered. Every string from the agent goes in as text.

import { h, timeNode, uid } from "./dom.js";

/** Whether the server recorded an answer (by a person or a timeout). */
export function isAnswered(ask) {
  return Boolean(ask.answeredAt || ask.answeredByAccountId);
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

// `question "<id>": ...` is how the server names a question in a field violation.
const QUESTION_PREFIX = /^question ("(?:[^"\\]|\\.)*"): /;

/** The pending form of one ask. `submit(askId, answers)` sends them; it rejects with RpcError. */
export class AskForm {
  constructor(ask, { submit }) {
    this.ask = ask;
    this.signature = questionSignature(ask);
    this.submitAnswers = submit;
    this.busy = false;
    this.questions = (ask.questions ?? []).map((question, index) => this.buildQuestion(question, index));
    this.skipNotice = h("p", { class: "skip-notice", role: "status", "aria-live": "polite" });
    this.formError = h("p", { class: "form-error", role: "alert", hidden: true });
    this.button = h("button", { type: "submit", class: "button button-primary" }, "Send answers");
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
      this.questions.map((q) => q.fieldset),
      h("div", { class: "ask-footer" }, this.skipNotice, this.formError, this.button),
    );
    this.refresh();
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
    if (skipped.size === 0) {
      this.skipNotice.replaceChildren();
      this.skipNotice.hidden = true;
      this.button.textContent = "Send answers";
      return;
    }
    const names = [...skipped].map((entry) => `“${questionTitle(entry.question)}”`).join(", ");
    const lead = `${plural(skipped.size, "question", "questions")} left empty will be sent as skipped: `;
    this.button.textContent =
      skipped.size === total ? "Send, skipping all" : `Send answers (${skipped.size} skipped)`;
    // Rewrite the live region only when its words change, so screen readers are not told
    // the same thing at every keystroke.
    if (!this.skipNotice.hidden && this.skipNotice.textContent === lead + names) return;
    this.skipNotice.hidden = false;
    this.skipNotice.replaceChildren(
      h("strong", {}, lead),
      names,
    );
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

  async send() {
    if (this.busy) return;
    this.clearErrors();
    this.busy = true;
    this.button.disabled = true;
    this.node.setAttribute("aria-busy", "true");
    try {
      await this.submitAnswers(this.ask.askId ?? "", this.answers());
    } catch (error) {
      this.showError(error);
    } finally {
      this.busy = false;
      this.button.disabled = false;
      this.node.removeAttribute("aria-busy");
    }
  }

  clearErrors() {
    this.formError.hidden = true;
    this.formError.replaceChildren();
    for (const entry of this.questions) {
      entry.violation.hidden = true;
      entry.violation.replaceChildren();
      entry.fieldset.classList.remove("has-violation");
      entry.other.removeAttribute("aria-invalid");
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
      const text = (violation.description || violation.field).replace(QUESTION_PREFIX, "");
      byQuestion.set(target, [...(byQuestion.get(target) ?? []), text]);
    }
    for (const [entry, messages] of byQuestion) {
      entry.violation.replaceChildren(...messages.flatMap((m, i) => (i ? [h("br"), m] : [m])));
      entry.violation.hidden = false;
      entry.fieldset.classList.add("has-violation");
      entry.other.setAttribute("aria-invalid", "true");
    }
    // Always a line by the button too: the question at fault may be scrolled out of view.
    const lead = this.describe(code, error?.message ?? "", byQuestion.size > 0);
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
        return "This ask has already been answered, so your answers were not sent.";
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
    const indexed = /^answers\[(\d+)\]/.exec(violation.field ?? "");
    if (indexed) return this.questions[Number(indexed[1])] ?? null;
    const named = QUESTION_PREFIX.exec(violation.description ?? "");
    if (!named) return null;
    let id;
    try {
      id = JSON.parse(named[1]);
    } catch {
      return null;
    }
    return this.questions.find((entry) => entry.question.questionId === id) ?? null;
  }
}

/** The read-only view of an answered ask. `note`: optional text shown above it. */
export function answeredView(ask, note = "") {
  const questions = (ask.questions ?? []).map((question) => {
    const options = new Map((question.options ?? []).map((o) => [o.id ?? "", o.label ?? ""]));
    const chosen = (question.chosenOptionIds ?? []).map((id) => options.get(id) ?? id);
    const text = question.customText ?? "";
    return h(
      "div",
      { class: "answered-question", dataset: { questionId: question.questionId ?? "" } },
      h(
        "p",
        { class: "answered-title" },
        question.header ? h("span", { class: "chip" }, question.header) : null,
        h("span", { class: "question-text" }, question.question ?? ""),
        question.timedOut ? h("span", { class: "badge badge-timeout" }, "Timed out") : null,
      ),
      chosen.length
        ? h("ul", { class: "chosen", "aria-label": "Chosen" }, chosen.map((label) => h("li", {}, label)))
        : null,
      text ? h("p", { class: "free-text-label" }, chosen.length || options.size ? "Other:" : "Answer:") : null,
      text ? h("blockquote", { class: "free-text" }, text) : null,
      !chosen.length && !text ? h("p", { class: "skipped" }, "Skipped") : null,
    );
  });
  const name = ask.answeredByName || ask.answeredByAccountId || "someone";
  return h(
    "section",
    { class: "ask ask-answered", dataset: { askId: ask.askId ?? "" }, "aria-label": "Answered questions" },
    note ? h("p", { class: "notice" }, note) : null,
    questions,
    h("p", { class: "answered-by" }, "Answered by ", h("strong", {}, name), " at ", timeNode(ask.answeredAt ?? "")),
  );
}
