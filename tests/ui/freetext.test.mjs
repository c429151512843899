// The pure free-text decisions of ui/src/freetext.js: which questions offer
// "Other", what a submit carries for each, when to warn that the agent sees only the text.
// (The form itself is covered by tests/browser/test_delivery.py.)

import assert from "node:assert/strict";
import { test } from "node:test";

import { FREE_TEXT, answersMatch, isSkipped } from "../../ui/src/ask.js";
import {
  TEXT_INSTEAD_OF_PICKS_WARNING,
  answerFor as answerForMessage,
  offersOther as offersOtherMessage,
  otherHint as otherHintMessage,
  textHidesPicks as textHidesPicksMessage,
} from "../../ui/src/freetext.js";
import { askOf, comms, questionOf } from "./_proto.mjs";
import { cases, int, pick, string } from "./_random.mjs";

// Questions are written loosely here (the policy by name or number, fields left out) and read
// into the AskQuestion the client decodes (an unknown name is the zero value).
const policy = (value) =>
  typeof value === "number" ? value : (comms.FreeTextSchema.values.find((v) => v.name === value)?.number ?? 0);
const q = ({ freeText, ...rest }) => questionOf({ ...rest, freeText: policy(freeText) });
const offersOther = (question) => offersOtherMessage(q(question));
const answerFor = (question, ...rest) => answerForMessage(q(question), ...rest);
const otherHint = (question) => otherHintMessage(q(question));
const textHidesPicks = (question, ...rest) => textHidesPicksMessage(q(question), ...rest);

const OPTIONS = [{ id: "a", label: "A" }, { id: "b", label: "B" }];
// Every way a policy can arrive: absent, by name, by number, and one this page does not know.
const POLICIES = [undefined, ...Object.values(FREE_TEXT), 0, 1, 2, 3, "FREE_TEXT_LATER", 9];
const refuses = (/** @type {unknown} */ policy) => policy === FREE_TEXT.REFUSED || policy === 2;

test("Other is offered unless the question refuses free text (absent, UNSPECIFIED, ACCEPTED, INSTEAD_OF_PICKS offer it)", () => {
  for (const freeText of POLICIES) {
    for (const allowMultiple of [false, true]) {
      const question = { questionId: "q", options: OPTIONS, allowMultiple, freeText };
      assert.equal(offersOther(question), !refuses(freeText), `${String(freeText)} multiple=${allowMultiple}`);
    }
  }
});

test("a question without options always offers the box: refusing it would leave it unanswerable", () => {
  for (const freeText of POLICIES) {
    assert.equal(offersOther({ questionId: "q", freeText }), true, String(freeText));
    assert.equal(offersOther({ questionId: "q", options: [], freeText }), true, String(freeText));
  }
});

test("a refused question's answer never carries customText, whatever was typed; others carry it trimmed", () => {
  const refused = { questionId: "q", options: OPTIONS, freeText: FREE_TEXT.REFUSED };
  assert.deepEqual(answerFor(refused, ["a"], "typed anyway"), { questionId: "q", chosenOptionIds: ["a"] });
  assert.equal("customText" in answerFor(refused, [], ""), false);
  assert.deepEqual(answerFor({ ...refused, freeText: 2 }, [], "x"), { questionId: "q", chosenOptionIds: [] });
  for (const freeText of [undefined, FREE_TEXT.ACCEPTED, FREE_TEXT.INSTEAD_OF_PICKS]) {
    assert.deepEqual(answerFor({ ...refused, freeText }, ["b"], "  mine \n"), {
      questionId: "q",
      chosenOptionIds: ["b"],
      customText: "mine",
    });
  }
  assert.deepEqual(answerFor({}, [], ""), { questionId: "", chosenOptionIds: [], customText: "" });
});

test("an answer without customText is a skip when it has no picks, and matches a stored answer without text", () => {
  const refused = { questionId: "q", options: OPTIONS, freeText: FREE_TEXT.REFUSED };
  assert.equal(isSkipped(answerFor(refused, [], "")), true);
  assert.equal(isSkipped(answerFor(refused, ["a"], "")), false);
  const stored = askOf({ questions: [{ questionId: "q", chosenOptionIds: ["a"] }] });
  assert.equal(answersMatch(stored, [answerFor(refused, ["a"], "ignored")]), true);
  assert.equal(answersMatch(askOf({ questions: [{ questionId: "q", chosenOptionIds: ["a"], customText: "t" }] }), [answerFor(refused, ["a"], "t")]), false);
});

test("the warning shows exactly when an INSTEAD_OF_PICKS question holds picks and non-blank text", () => {
  for (const [freeText, picks, text] of cases(71, 500, (r) => [
    pick(r, POLICIES),
    int(r, 0, 3),
    pick(r, ["", " ", "\n\t", string(r, 12)]),
  ])) {
    const question = { questionId: "q", options: OPTIONS, allowMultiple: true, freeText };
    const insteadOfPicks = freeText === FREE_TEXT.INSTEAD_OF_PICKS || freeText === 3;
    const expected = insteadOfPicks && picks > 0 && text.trim() !== "";
    assert.equal(textHidesPicks(question, picks, text), expected, JSON.stringify([freeText, picks, text]));
  }
  const question = { questionId: "q", options: OPTIONS, allowMultiple: true, freeText: FREE_TEXT.INSTEAD_OF_PICKS };
  assert.equal(textHidesPicks(question, 1, "x"), true);
  assert.equal(textHidesPicks(question, 0, "x"), false); // text alone arrives whole
  assert.equal(textHidesPicks(question, 2, ""), false); // picks alone arrive whole
  assert.equal(textHidesPicks(question, 2, "   "), false); // blank text is not sent
  assert.match(TEXT_INSTEAD_OF_PICKS_WARNING, /^The agent will see only your text for this question/);
});

test("the hint under the box says what the text does, per question kind and policy", () => {
  assert.equal(otherHint({}), "Answer in your own words.");
  assert.equal(otherHint({ options: OPTIONS }), "Typing here replaces the choice above.");
  assert.equal(otherHint({ options: OPTIONS, freeText: FREE_TEXT.INSTEAD_OF_PICKS }), "Typing here replaces the choice above.");
  assert.equal(otherHint({ options: OPTIONS, allowMultiple: true }), "Optional, alongside the options you tick.");
  assert.equal(otherHint({ options: OPTIONS, allowMultiple: true, freeText: FREE_TEXT.ACCEPTED }), "Optional, alongside the options you tick.");
  assert.equal(
    otherHint({ options: OPTIONS, allowMultiple: true, freeText: 3 }),
    "Optional. With options ticked, the agent sees only this text.",
  );
});
