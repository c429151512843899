// @ts-check
// Free text ("Other") in the pending form, as the agent can receive it (AskQuestion.free_text,
// decided by the side that posted the ask): which questions offer the box, what a submit
// carries for each, and when to warn that picks and text will not both reach the agent.
// No DOM: Node tests it (tests/ui/freetext.test.mjs); form.js uses it.

import { FREE_TEXT, freeTextPolicy } from "./ask.js";

/**
 * @typedef {import("./ask.js").Question} Question
 * @typedef {import("./ask.js").Answer} Answer
 */

/** Shown next to an INSTEAD_OF_PICKS question holding picks and text (the submit stays open:
 * the person decides). */
export const TEXT_INSTEAD_OF_PICKS_WARNING =
  "The agent will see only your text for this question, not the options you ticked. " +
  "Clear the text to send the options instead.";

/**
 * Whether the form offers a free-text box for `question`: not where the agent cannot receive
 * free text (REFUSED), except on a question without options, which would be unanswerable
 * without it (the contract says such a question cannot refuse it).
 * @param {Question} question
 */
export function offersOther(question) {
  return freeTextPolicy(question) !== FREE_TEXT.REFUSED || !question.options.length;
}

/**
 * Whether to warn that the agent will see only the text: the question says free text arrives
 * instead of picks, and the person has both ticked an option and typed (non-blank) text.
 * @param {Question} question
 * @param {number} picks how many options are ticked
 * @param {string} text what is in the box
 */
export function textHidesPicks(question, picks, text) {
  return freeTextPolicy(question) === FREE_TEXT.INSTEAD_OF_PICKS && picks > 0 && text.trim() !== "";
}

/**
 * The hint under a question's free-text box.
 * @param {Question} question
 */
export function otherHint(question) {
  const options = question.options.length;
  if (!options) return "Answer in your own words.";
  if (!question.allowMultiple) return "Typing here replaces the choice above.";
  if (freeTextPolicy(question) === FREE_TEXT.INSTEAD_OF_PICKS) {
    return "Optional. With options ticked, the agent sees only this text.";
  }
  return "Optional, alongside the options you tick.";
}

/**
 * The RespondToAsk answer for `question`: its picks, and its trimmed text only where the
 * question offers the box (a question that refuses free text never carries customText).
 * @param {Question} question
 * @param {string[]} chosenOptionIds
 * @param {string} text
 * @returns {Answer}
 */
export function answerFor(question, chosenOptionIds, text) {
  const questionId = question.questionId ?? "";
  if (!offersOther(question)) return { questionId, chosenOptionIds };
  return { questionId, chosenOptionIds, customText: text.trim() };
}
