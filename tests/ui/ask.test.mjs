// The pure functions of ui/src/ask.js: status, wording, draft and answer
// rules, violation routing, the countdown. (The form itself is covered by tests/browser.)

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  FREE_TEXT,
  STATUS,
  answersMatch,
  askStatus,
  chosenLabels,
  closedPhrase,
  countdownText,
  describeDeclineError,
  describeSendError,
  enumName,
  formatRemaining,
  freeTextPolicy,
  interruptedNote,
  notWaitingText,
  isAnswered,
  isFinal,
  isSkipped,
  millis,
  plural,
  questionSignature,
  requiredSkipped,
  questionTitle,
  recommendedIndex,
  restoredChoice,
  sendLabel,
  skipNotice,
  violationPart,
  violationQuestion,
  violationText,
  rfc3339,
  sentenceText,
} from "../../ui/src/ask.js";
import { CODES, RpcError } from "../../ui/src/rpc.js";
import { askOf, at, comms, questionOf } from "./_proto.mjs";
import { cases, int, pick, string } from "./_random.mjs";

const { AskStatus, AskTimeoutPolicy, FreeText, FreeTextSchema } = comms;

const FINAL = [STATUS.ANSWERED, STATUS.DECLINED, STATUS.WITHDRAWN, STATUS.TIMED_OUT, STATUS.EXPIRED];

test("askStatus reads the status; unset falls back on the stored answer; one this page does not know is named by its number", () => {
  [1, 2, 3, 4, 5, 6].forEach((n, i) => assert.equal(askStatus(askOf({ status: n })), [STATUS.PENDING, ...FINAL][i]));
  assert.equal(askStatus(askOf()), STATUS.PENDING);
  assert.equal(askStatus(askOf({ answeredAt: at("2024-01-01T00:00:00Z") })), STATUS.ANSWERED);
  assert.equal(askStatus(askOf({ answeredByAccountId: "a" })), STATUS.ANSWERED);
  assert.equal(askStatus(askOf({ status: 9 })), "ASK_STATUS_9");
  assert.deepEqual(Object.values(STATUS), ["ASK_STATUS_UNSPECIFIED", ...[STATUS.PENDING, ...FINAL]]);
  assert.equal(STATUS.DECLINED, "ASK_STATUS_DECLINED");
});

test("enumName is the proto's name; a number this page does not know keeps its number", () => {
  assert.equal(enumName(FreeTextSchema, FreeText.REFUSED), "FREE_TEXT_REFUSED");
  assert.equal(enumName(FreeTextSchema, 0), "FREE_TEXT_UNSPECIFIED");
  assert.equal(enumName(FreeTextSchema, 9), "FREE_TEXT_9");
});

test("freeTextPolicy: UNSPECIFIED means ACCEPTED (asks posted before the field)", () => {
  assert.equal(freeTextPolicy(questionOf()), FREE_TEXT.ACCEPTED);
  assert.equal(freeTextPolicy(questionOf({ freeText: FreeText.ACCEPTED })), FREE_TEXT.ACCEPTED);
  assert.equal(freeTextPolicy(questionOf({ freeText: FreeText.REFUSED })), FREE_TEXT.REFUSED);
  assert.equal(freeTextPolicy(questionOf({ freeText: FreeText.INSTEAD_OF_PICKS })), FREE_TEXT.INSTEAD_OF_PICKS);
  assert.equal(freeTextPolicy(questionOf({ freeText: 7 })), "FREE_TEXT_7");
});

test("every status but PENDING is final, including ones this page does not know", () => {
  assert.equal(isFinal(askOf({ status: AskStatus.PENDING })), false);
  for (const status of [2, 3, 4, 5, 6, 7]) assert.equal(isFinal(askOf({ status })), true, String(status));
  assert.equal(isAnswered(askOf()), false);
  assert.equal(isAnswered(askOf({ answeredAt: at("2024-01-01T00:00:00Z") })), true);
});

test("millis and rfc3339 read a Timestamp; unset is NaN and empty", () => {
  const ms = Date.parse("2024-05-06T07:08:09.123Z");
  assert.equal(millis(at("2024-05-06T07:08:09.123Z")), ms);
  assert.equal(rfc3339(at("2024-05-06T07:08:09.123Z")), "2024-05-06T07:08:09.123Z");
  assert.equal(rfc3339(at("2026-03-04T05:06:07Z")), "2026-03-04T05:06:07Z");
  assert.ok(Number.isNaN(millis(undefined)));
  assert.equal(rfc3339(undefined), "");
});

test("closedPhrase and interruptedNote name each outcome", () => {
  /** @param {object} fields */
  const phrase = (fields) => sentenceText(closedPhrase(askOf(fields)));
  assert.equal(phrase({ status: AskStatus.ANSWERED }), "This ask has already been answered");
  assert.equal(phrase({ status: AskStatus.DECLINED, closedByName: "Grace" }), "This ask was declined by Grace");
  assert.equal(phrase({ status: AskStatus.DECLINED, closedByAccountId: "acc-1" }), "This ask was declined by acc-1");
  assert.equal(phrase({ status: AskStatus.DECLINED }), "This ask was declined by another participant");
  assert.equal(phrase({ status: AskStatus.WITHDRAWN }), "The agent withdrew this ask");
  assert.equal(phrase({ status: AskStatus.TIMED_OUT }), "This ask timed out and the agent picked the answers itself");
  assert.equal(phrase({ status: AskStatus.EXPIRED }), "This ask expired");
  assert.equal(phrase({ status: 9 }), "This ask was closed");
  // The closer's name is its own part, which the page isolates (a U+202E in it stays in it).
  assert.deepEqual(closedPhrase(askOf({ status: AskStatus.DECLINED, closedByName: "\u202eGrace" })), [
    "This ask was declined by ",
    { name: "\u202eGrace" },
  ]);
  assert.equal(interruptedNote(askOf({ status: AskStatus.EXPIRED })), "This ask expired while you were filling it in; your answers were not sent.");
  assert.equal(interruptedNote(askOf({ status: 8 })), "This ask was closed while you were filling it in; your answers were not sent.");
});

test("formatRemaining counts down in d h:mm:ss, and reads back to the same seconds", () => {
  assert.equal(formatRemaining(0), "0:00");
  assert.equal(formatRemaining(-5), "0:00");
  assert.equal(formatRemaining(83.9), "1:23");
  assert.equal(formatRemaining(3723), "1:02:03");
  assert.equal(formatRemaining(2 * 86400 + 3 * 3600 + 4 * 60 + 5), "2 d 3:04:05");
  assert.equal(formatRemaining(86400), "1 d 0:00:00");
  for (const seconds of cases(41, 1000, (r) => r() * 10 * 86400)) {
    const text = formatRemaining(seconds);
    const match = /^(?:(\d+) d )?(?:(\d+):)?(\d+):(\d\d)$/.exec(text);
    assert.ok(match, text);
    const [, d = "0", h = "0", m, s] = match;
    assert.equal(Number(d) * 86400 + Number(h) * 3600 + Number(m) * 60 + Number(s), Math.floor(seconds), text);
    if (match[1] || match[2]) assert.match(text, /:\d\d:\d\d$/); // minutes padded once hours show
  }
});

test("countdownText: running, the last minute, time up; under either policy", () => {
  const { PICK_RECOMMENDED, FAIL, UNSPECIFIED } = AskTimeoutPolicy;
  assert.deepEqual(countdownText(61, UNSPECIFIED), {
    clock: "Answer within 1:01",
    then: " — then the ask expires.",
    state: "running",
  });
  assert.equal(countdownText(60, UNSPECIFIED).state, "soon");
  assert.equal(countdownText(1, UNSPECIFIED).state, "soon");
  assert.deepEqual(countdownText(0, PICK_RECOMMENDED), {
    clock: "Time is up",
    then: " — the agent picks the recommended option.",
    state: "up",
  });
  assert.equal(countdownText(-3, PICK_RECOMMENDED).then, " — the agent picks the recommended option.");
  assert.equal(countdownText(30, PICK_RECOMMENDED).then, " — then the agent picks the recommended option.");
  assert.equal(countdownText(30, FAIL).then, " — then the ask expires.");
});

function randomQuestion(r) {
  return {
    questionId: string(r, 6),
    question: string(r),
    header: string(r, 8),
    allowMultiple: r() < 0.5,
    recommended: pick(r, [undefined, 0, 1, 5]),
    freeText: pick(r, [0, 1, 2, 3]),
    options: Array.from({ length: int(r, 0, 4) }, (_, i) => ({ id: String(i + 1), label: string(r), description: string(r), preview: string(r) })),
  };
}

test("questionSignature ignores answer state and sees every question field", () => {
  for (const questions of cases(42, 200, (r) => Array.from({ length: int(r, 1, 3) }, () => randomQuestion(r)))) {
    const ask = askOf({ askId: "a", questions });
    const answered = askOf({
      askId: "a",
      status: AskStatus.ANSWERED,
      answeredAt: at("2024-01-01T00:00:00Z"),
      questions: questions.map((q) => ({ ...q, chosenOptionIds: ["1"], customText: "t", timedOut: true })),
    });
    assert.equal(questionSignature(answered), questionSignature(ask));
    const relabelled = structuredClone(questions);
    relabelled[0].question += "?";
    assert.notEqual(questionSignature(askOf({ questions: relabelled })), questionSignature(ask));
    const flipped = structuredClone(questions);
    flipped[0].allowMultiple = !flipped[0].allowMultiple;
    assert.notEqual(questionSignature(askOf({ questions: flipped })), questionSignature(ask));
    // What the agent can receive as free text changes the form (the "Other" box comes or goes).
    const refused = structuredClone(questions);
    const wasRefused = freeTextPolicy(questionOf(refused[0])) === FREE_TEXT.REFUSED;
    refused[0].freeText = wasRefused ? FreeText.ACCEPTED : FreeText.REFUSED;
    assert.notEqual(questionSignature(askOf({ questions: refused })), questionSignature(ask));
  }
  assert.equal(questionSignature(askOf()), "[]");
});

test("recommendedIndex is the index only when it names an option", () => {
  const options = [{ id: "1" }, { id: "2" }];
  assert.equal(recommendedIndex(questionOf({ options, recommended: 1 })), 1);
  assert.equal(recommendedIndex(questionOf({ options, recommended: 0 })), 0);
  for (const recommended of [2, -1, undefined]) {
    assert.equal(recommendedIndex(questionOf({ options, recommended })), -1, String(recommended));
  }
  assert.equal(recommendedIndex(questionOf({ recommended: 0 })), -1);
});

test("plural and questionTitle", () => {
  assert.equal(plural(1, "question", "questions"), "1 question");
  assert.equal(plural(0, "question", "questions"), "0 questions");
  assert.equal(questionTitle(questionOf({ question: "Q", header: "H" })), "Q");
  assert.equal(questionTitle(questionOf({ header: "H", questionId: "id" })), "H");
  assert.equal(questionTitle(questionOf({ questionId: "id" })), "id");
  assert.equal(questionTitle(questionOf()), "(untitled question)");
});

test("violationPart tells free text from the chosen options, in both spellings", () => {
  assert.equal(violationPart({ field: "answers[0].custom_text", description: "" }), "text");
  assert.equal(violationPart({ field: "answers[12].customText", description: "" }), "text");
  assert.equal(violationPart({ field: "answers[1].chosen_option_ids[0]", description: "" }), "choice");
  assert.equal(violationPart({ field: "answers[1].chosenOptionIds", description: "" }), "choice");
  assert.equal(violationPart({ field: "answers[1]", description: "" }), null);
  assert.equal(violationPart({ field: "answers[1].custom_textual", description: "" }), null);
  assert.equal(violationPart(null), null);
});

test("violationQuestion finds the question by the id it carries, else by its answers[i] path", () => {
  const ids = ["db", 'say "hi"', "x"];
  const v = (field, questionId = "", description = "") => ({ field, description, questionId });
  assert.equal(violationQuestion(v("answers[0].custom_text", "x"), ids), 2); // the id wins
  assert.equal(violationQuestion(v("", 'say "hi"'), ids), 1);
  assert.equal(violationQuestion(v("answers[0]", "gone"), ids), -1);
  assert.equal(violationQuestion(v("answers[1].custom_text"), ids), 1);
  assert.equal(violationQuestion(v("answers[3]"), ids), -1);
  assert.equal(violationQuestion(v("ask_id", "", 'question "x": not by its words'), ids), -1);
  for (const [id, others] of cases(43, 300, (r) => [string(r, 10), Array.from({ length: int(r, 0, 4) }, () => string(r, 10))])) {
    const all = [...others.filter((o) => o !== id), id];
    assert.equal(violationQuestion(v("answers[0]", id), all), id ? all.length - 1 : 0, JSON.stringify(id));
  }
});

test("violationText drops only the exact question prefix of its own question", () => {
  const v = (description, questionId, field = "answers[0]") => ({ field, description, questionId });
  assert.equal(violationText(v('question "db": pick one', "db")), "pick one");
  assert.equal(violationText(v('question "db": pick one', "")), 'question "db": pick one');
  assert.equal(violationText(v('question "other": pick one', "db")), 'question "other": pick one');
  assert.equal(violationText(v("", "db")), "answers[0]");
  for (const [id, rest] of cases(46, 300, (r) => [string(r, 10), string(r, 30)])) {
    if (!id) continue;
    assert.equal(violationText(v(`question ${JSON.stringify(id)}: ${rest}`, id)), rest);
  }
});

test("answersMatch: same picks in any order and the same text, for every answer", () => {
  for (const [stored, shuffle] of cases(44, 300, (r) => {
    const questions = Array.from({ length: int(r, 1, 4) }, (_, i) => ({
      questionId: `q${i}`,
      chosenOptionIds: Array.from({ length: int(r, 0, 3) }, () => String(int(r, 1, 9))),
      customText: pick(r, ["", string(r)]),
    }));
    return [questions, r];
  })) {
    const ask = askOf({ questions: stored });
    const answers = stored.map((q) => ({
      questionId: q.questionId,
      chosenOptionIds: [...q.chosenOptionIds].sort(() => shuffle() - 0.5),
      customText: q.customText,
    }));
    assert.equal(answersMatch(ask, answers), true);
    const changed = structuredClone(answers);
    changed[int(shuffle, 0, changed.length - 1)].customText += "!";
    assert.equal(answersMatch(ask, changed), false);
    const extra = structuredClone(answers);
    extra[0].chosenOptionIds.push("x");
    assert.equal(answersMatch(ask, extra), false);
    assert.equal(answersMatch(ask, [...answers, { questionId: "gone", chosenOptionIds: [], customText: "" }]), false);
  }
  assert.equal(answersMatch(askOf({ questions: [{ questionId: "a" }] }), [{ questionId: "a", chosenOptionIds: [], customText: "" }]), true);
  assert.equal(answersMatch(askOf({ questions: [{ questionId: "a" }] }), [{ questionId: "a", chosenOptionIds: [] }]), true);
});

test("isSkipped, sendLabel and skipNotice say what goes as skipped", () => {
  assert.equal(isSkipped({ questionId: "a", chosenOptionIds: [], customText: "" }), true);
  assert.equal(isSkipped({ questionId: "a", chosenOptionIds: ["1"], customText: "" }), false);
  assert.equal(isSkipped({ questionId: "a", chosenOptionIds: [], customText: "t" }), false);
  assert.equal(sendLabel(0, 3), "Send answers");
  assert.equal(sendLabel(2, 3), "Send answers (2 skipped)");
  assert.equal(sendLabel(3, 3), "Send answers");
  assert.equal(skipNotice([], 2), null);
  assert.deepEqual(skipNotice(["A"], 1), { lead: "Nothing entered yet: answer the question, or skip it.", names: [] });
  assert.deepEqual(skipNotice(["A", "B"], 2), {
    lead: "Nothing entered yet: answer at least one question, or skip them all.",
    names: [],
  });
  const two = skipNotice(["A", "B"], 3);
  assert.equal(two?.lead, "2 questions left empty will be sent as skipped: ");
  assert.equal(sentenceText(two?.names ?? []), "“A”, “B”");
  // Each title is its own part (isolated on the page), the quotes and commas are ours.
  assert.deepEqual(two?.names, ["“", { name: "A" }, "”", ", “", { name: "B" }, "”"]);
  assert.equal(skipNotice(["A"], 3).lead, "1 question left empty will be sent as skipped: ");
});

test("describeSendError: every Connect code gets words, retryable ones keep the answers", () => {
  for (const code of CODES) {
    const text = describeSendError(code, "MSG", false);
    assert.ok(text.length > 0, code);
    if (["unavailable", "deadline_exceeded", "aborted"].includes(code)) {
      assert.equal(text, "The server could not take your answers right now. They are kept here; try again.");
    }
  }
  assert.equal(describeSendError("invalid_argument", "MSG", true), "Some answers were not accepted; see the notes next to them.");
  assert.equal(describeSendError("invalid_argument", "MSG", false), "The answers were not accepted: MSG");
  assert.equal(describeSendError("not_found", "MSG", false), "This ask is no longer available to you.");
  assert.match(describeSendError("unauthenticated", "", false), /sign in again/);
  // A proxy's bare 400 is `internal` now, not a refusal of the answers.
  assert.equal(describeSendError("internal", "HTTP 400", false), "Something went wrong while sending. Your answers are kept here; try again.");
});

test("describeDeclineError: closed meanwhile, sign-in, retry, or the server's words", () => {
  /** @param {unknown} error */
  const declineText = (error) => sentenceText(describeDeclineError(error));
  const closed = new RpcError("failed_precondition", "closed");
  closed.closedAsk = askOf({ status: AskStatus.WITHDRAWN });
  assert.equal(declineText(closed), "The agent withdrew this ask, so it was not declined.");
  const stillPending = new RpcError("failed_precondition", "closed");
  stillPending.closedAsk = askOf({ status: AskStatus.PENDING });
  assert.equal(declineText(stillPending), "The ask was not declined: closed");
  assert.equal(declineText(new RpcError("unauthenticated", "x")), "Your token is no longer accepted; sign in again to decline.");
  for (const code of ["unavailable", "deadline_exceeded", "aborted"]) {
    assert.equal(declineText(new RpcError(code, "x")), "The server could not be reached; the ask was not declined. Try again.");
  }
  assert.equal(declineText(new RpcError("internal", "HTTP 400")), "The ask was not declined: HTTP 400");
  assert.equal(declineText(null), "The ask was not declined: something went wrong");
  assert.equal(declineText(new TypeError("boom")), "The ask was not declined: boom");
  const declined = new RpcError("failed_precondition", "closed");
  declined.closedAsk = askOf({ status: AskStatus.DECLINED, closedByName: "Grace" });
  assert.deepEqual(describeDeclineError(declined), ["This ask was declined by ", { name: "Grace" }, ", so it was not declined."]);
});

test("restoredChoice keeps the draft's picks; a single-select question with several gets none", () => {
  for (const [ids, chosen, multiple] of cases(45, 300, (r) => {
    const ids = Array.from({ length: int(r, 0, 5) }, (_, i) => String(i + 1));
    const chosen = new Set(Array.from({ length: int(r, 0, 3) }, () => String(int(r, 1, 7))));
    return [ids, chosen, r() < 0.5];
  })) {
    const ticked = restoredChoice(ids, chosen, multiple);
    assert.equal(ticked.length, ids.length);
    const kept = ids.map((id) => chosen.has(id));
    if (multiple || kept.filter(Boolean).length <= 1) assert.deepEqual(ticked, kept);
    else assert.deepEqual(ticked, ids.map(() => false));
  }
});

test("chosenLabels shows each chosen option's label, an unknown id as itself", () => {
  const question = questionOf({ options: [{ id: "1", label: "Postgres" }, { id: "2" }] });
  assert.deepEqual(chosenLabels(question, ["2", "1", "9"]), ["", "Postgres", "9"]);
  assert.deepEqual(chosenLabels(questionOf(), ["x"]), ["x"]);
});

test("requiredSkipped names the required questions left without a pick or text", () => {
  const questions = [
    questionOf({ questionId: "a", answerRequired: true }),
    questionOf({ questionId: "b" }),
    questionOf({ questionId: "c", answerRequired: true }),
    questionOf({ questionId: "d", answerRequired: true }),
  ];
  const answers = [
    { questionId: "a", chosenOptionIds: [], customText: "" },
    { questionId: "b", chosenOptionIds: [], customText: "" },
    { questionId: "c", chosenOptionIds: ["0"], customText: "" },
    { questionId: "d", chosenOptionIds: [], customText: "mine" },
  ];
  assert.deepEqual(requiredSkipped(questions, answers), [0]);
  assert.deepEqual(requiredSkipped(questions, []), [0, 2, 3]);
  assert.deepEqual(requiredSkipped([questionOf({ questionId: "x" })], []), []);
});

test("a required question changes the form's signature", () => {
  const ask = (required) => askOf({ questions: [{ questionId: "a", answerRequired: required }] });
  assert.notEqual(questionSignature(ask(true)), questionSignature(ask(false)));
});

test("notWaitingText: the agent is not waiting; withdrawn in m:ss, or any moment now", () => {
  assert.equal(
    notWaitingText(61),
    "Its agent is not waiting right now: an answer reaches it only if it comes back, " +
      "and the ask is withdrawn in 1:01 unless it does.",
  );
  assert.match(notWaitingText(0), /withdrawn any moment now unless it does\.$/);
  assert.match(notWaitingText(-5), /withdrawn any moment now unless it does\.$/);
});
