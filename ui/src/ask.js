// @ts-check
// An Ask block's rules and words, without the DOM: its status, the countdown's text, how a
// refused answer is routed to its questions, what the form says. The pending form is form.js,
// the read-only view of a closed ask closed.js; Node tests these (tests/ui/ask.test.mjs).

import { toJson } from "@bufbuild/protobuf";
import { TimestampSchema, timestampMs } from "@bufbuild/protobuf/wkt";

import { AskStatus, AskStatusSchema, AskTimeoutPolicy, FreeText, FreeTextSchema } from "../gen/compass/v1/comms_pb.js";

// The messages read here are generated from proto/ (ui/gen): every field is there (a scalar at
// its zero value when unset), enums are numbers, Timestamps are messages.
/**
 * @typedef {import("../gen/compass/v1/comms_pb.js").Ask} Ask
 * @typedef {import("../gen/compass/v1/comms_pb.js").AskQuestion} Question
 * @typedef {import("../gen/compass/v1/comms_pb.js").AskDelivery} AskDelivery
 * @typedef {import("@bufbuild/protobuf/wkt").Timestamp} Timestamp
 * @typedef {{questionId: string, chosenOptionIds: string[], customText?: string}} Answer
 *   One AskQuestionAnswer of a RespondToAsk request (no customText: the question takes none).
 * @typedef {{chosen: Set<string>, text: string}} QuestionDraft
 * @typedef {{question: Question, chosen: string[], text: string}} UnsentAnswer
 * @typedef {import("./rpc.js").Violation} Violation
 * @typedef {{code?: unknown, message?: unknown, violations?: unknown, closedAsk?: Ask | null}} SendError
 *   What a failed submit or decline rejects with (an RpcError, or anything else thrown).
 * @typedef {Array<string | {name: string}>} Sentence Words for the page: our own (strings)
 *   and someone else's ({name}: a name, a question's title, an address), which the page shows
 *   each alone in an isolated element (dom.js `sentence`), so that a bidi control in them
 *   cannot reorder our words around them.
 */

/**
 * A sentence's plain text (what a screen shows, less the isolation).
 * @param {Sentence} sentence
 */
export function sentenceText(sentence) {
  return sentence.map((part) => (typeof part === "string" ? part : part.name)).join("");
}

/**
 * An enum value's name in the proto ("ASK_STATUS_PENDING"); a number this page does not know
 * (a newer server's) is `<PREFIX><number>` ("ASK_STATUS_9").
 * @param {import("@bufbuild/protobuf").DescEnum} schema
 * @param {number} value
 * @returns {string}
 */
export function enumName(schema, value) {
  const known = schema.value[value];
  if (known) return known.name;
  return `${schema.values[0]?.name.replace(/UNSPECIFIED$/, "") ?? ""}${value}`;
}

/** The AskStatus names, as the page uses them (also its `data-status`). */
export const STATUS = Object.freeze({
  UNSPECIFIED: enumName(AskStatusSchema, AskStatus.UNSPECIFIED),
  PENDING: enumName(AskStatusSchema, AskStatus.PENDING),
  ANSWERED: enumName(AskStatusSchema, AskStatus.ANSWERED),
  DECLINED: enumName(AskStatusSchema, AskStatus.DECLINED),
  WITHDRAWN: enumName(AskStatusSchema, AskStatus.WITHDRAWN),
  TIMED_OUT: enumName(AskStatusSchema, AskStatus.TIMED_OUT),
  EXPIRED: enumName(AskStatusSchema, AskStatus.EXPIRED),
});

/** The FreeText names: what the agent can receive as free text ("Other") for a question. */
export const FREE_TEXT = Object.freeze({
  UNSPECIFIED: enumName(FreeTextSchema, FreeText.UNSPECIFIED),
  ACCEPTED: enumName(FreeTextSchema, FreeText.ACCEPTED),
  REFUSED: enumName(FreeTextSchema, FreeText.REFUSED),
  INSTEAD_OF_PICKS: enumName(FreeTextSchema, FreeText.INSTEAD_OF_PICKS),
});

/**
 * What the agent can receive as free text for `question`, by name. UNSPECIFIED (an ask
 * posted before the field existed) means ACCEPTED; a value this page does not know stays as
 * it is (the form then offers the box, and the server judges).
 * @param {Question} question
 */
export function freeTextPolicy(question) {
  const name = enumName(FreeTextSchema, question.freeText);
  return name === FREE_TEXT.UNSPECIFIED ? FREE_TEXT.ACCEPTED : name;
}

/**
 * Milliseconds since the epoch of a Timestamp, NaN when unset.
 * @param {Timestamp | undefined} timestamp
 */
export function millis(timestamp) {
  return timestamp ? timestampMs(timestamp) : Number.NaN;
}

/**
 * A Timestamp as RFC 3339, the way the proto writes it in JSON ("2026-03-04T05:06:07Z"); ""
 * when unset or out of range.
 * @param {Timestamp | undefined} timestamp
 */
export function rfc3339(timestamp) {
  if (!timestamp) return "";
  try {
    return String(toJson(TimestampSchema, timestamp));
  } catch {
    return "";
  }
}

/**
 * Whether the server recorded an answer (by a person or a timeout).
 * @param {Ask} ask
 */
export function isAnswered(ask) {
  return Boolean(ask.answeredAt || ask.answeredByAccountId);
}

/**
 * The ask's status name. Unset (an older server): ANSWERED once an answer is stored, else
 * PENDING. A status this page does not know is final too (every status but PENDING is).
 * @param {Ask} ask
 * @returns {string}
 */
export function askStatus(ask) {
  const status = enumName(AskStatusSchema, ask.status);
  if (status !== STATUS.UNSPECIFIED && status !== STATUS.PENDING) return status;
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
export function closerName(ask, fallback) {
  return ask.closedByName || ask.closedByAccountId || fallback;
}

/**
 * How the ask ended, as the start of a sentence ("This ask was declined by Grace").
 * @param {Ask} ask
 * @returns {Sentence}
 */
export function closedPhrase(ask) {
  switch (askStatus(ask)) {
    case STATUS.ANSWERED:
      return ["This ask has already been answered"];
    case STATUS.DECLINED:
      return ["This ask was declined by ", { name: closerName(ask, "another participant") }];
    case STATUS.WITHDRAWN:
      return ["The agent withdrew this ask"];
    case STATUS.TIMED_OUT:
      return ["This ask timed out and the agent picked the answers itself"];
    case STATUS.EXPIRED:
      return ["This ask expired"];
    default:
      return ["This ask was closed"];
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
 * under the ask's timeout policy (PICK_RECOMMENDED, else it expires), and its state for
 * styling: "running", "soon" (the last minute) or "up".
 * @param {number} remaining
 * @param {AskTimeoutPolicy} policy
 */
export function countdownText(remaining, policy) {
  const up = remaining <= 0;
  const pick = policy === AskTimeoutPolicy.PICK_RECOMMENDED;
  const clock = up ? "Time is up" : `Answer within ${formatRemaining(remaining)}`;
  let then;
  if (up) then = pick ? " — the agent picks the recommended option." : " — the ask expires.";
  else then = pick ? " — then the agent picks the recommended option." : " — then the ask expires.";
  const state = up ? "up" : remaining <= 60 ? "soon" : "running";
  return { clock, then, state };
}

/**
 * What a pending ask says while its agent is not waiting for it (Ask.withdrawAt is set: an
 * MCP ask whose tool call returned `pending` or whose client went away), `remaining` whole
 * seconds before the server withdraws it unless the agent comes back.
 * @param {number} remaining
 */
export function notWaitingText(remaining) {
  const when = remaining > 0 ? `in ${formatRemaining(remaining)}` : "any moment now";
  return (
    "Its agent is not waiting right now: an answer reaches it only if it comes back, " +
    `and the ask is withdrawn ${when} unless it does.`
  );
}

/**
 * The ask's questions without answer state: equal signatures render the same form.
 * @param {Ask} ask
 */
export function questionSignature(ask) {
  return JSON.stringify(
    ask.questions.map((q) => [
      q.questionId,
      q.question,
      q.header,
      q.allowMultiple,
      q.recommended ?? null,
      freeTextPolicy(q),
      q.answerRequired,
      q.options.map((o) => [o.id, o.label, o.description, o.preview]),
    ]),
  );
}

/**
 * The index of the recommended option, or -1 when unset or out of range (no mark then).
 * @param {Question} question
 */
export function recommendedIndex(question) {
  const index = question.recommended;
  const count = question.options.length;
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

/** What a required question says when it is left unanswered (the server refuses the skip). */
export const REQUIRED_SKIPPED = "The agent needs an answer to this question: it cannot be skipped.";

/**
 * The questions (by index) that must not be skipped but are, in `answers` (question order).
 * @param {Question[]} questions
 * @param {Answer[]} answers
 * @returns {number[]}
 */
export function requiredSkipped(questions, answers) {
  return questions.flatMap((question, index) => {
    const answer = answers[index];
    return question.answerRequired && (!answer || isSkipped(answer)) ? [index] : [];
  });
}

/**
 * Whether the stored answer of `ask` is exactly `answers` (same picks in any order, same
 * text, for every question), so that nothing entered is lost.
 * @param {Ask} ask
 * @param {Answer[]} answers
 */
export function answersMatch(ask, answers) {
  const stored = new Map(ask.questions.map((q) => [q.questionId, q]));
  return answers.every((answer) => {
    const q = stored.get(answer.questionId);
    if (!q) return false;
    const chosen = [...q.chosenOptionIds].sort();
    const mine = [...answer.chosenOptionIds].sort();
    return q.customText === (answer.customText ?? "") && JSON.stringify(chosen) === JSON.stringify(mine);
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
 * @returns {{lead: string, names: Sentence} | null}
 */
export function skipNotice(skippedTitles, total) {
  if (skippedTitles.length === 0) return null;
  if (skippedTitles.length === total) {
    return {
      lead: total === 1
        ? "Nothing entered yet: answer the question, or skip it."
        : "Nothing entered yet: answer at least one question, or skip them all.",
      names: [],
    };
  }
  return {
    lead: `${plural(skippedTitles.length, "question", "questions")} left empty will be sent as skipped: `,
    names: skippedTitles.flatMap((title, index) => [index ? ", “" : "“", { name: title }, "”"]),
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
 * @returns {Sentence}
 */
export function describeDeclineError(error) {
  const code = errorCode(error);
  if (code === "failed_precondition" && error?.closedAsk && isFinal(error.closedAsk)) {
    return [...closedPhrase(error.closedAsk), ", so it was not declined."];
  }
  if (code === "unauthenticated") return ["Your token is no longer accepted; sign in again to decline."];
  if (["unavailable", "deadline_exceeded", "aborted"].includes(code)) {
    return ["The server could not be reached; the ask was not declined. Try again."];
  }
  return [`The ask was not declined: ${typeof error?.message === "string" ? error.message : "something went wrong"}`];
}

/**
 * The Connect code of what a send rejected with ("unknown" for anything but an RpcError).
 * @param {SendError | null | undefined} error
 */
export function errorCode(error) {
  return error && typeof error.code === "string" ? error.code : "unknown";
}

/**
 * The ask as stored when `error` says the send found it closed, else null.
 * @param {SendError | null | undefined} error
 */
export function closedAskOf(error) {
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
  const labels = new Map(question.options.map((o) => [o.id, o.label]));
  return ids.map((id) => labels.get(id) ?? id);
}
