/**
 * Compass's question tool for pi (`@mariozechner/pi-coding-agent`): `ask_user`.
 *
 * pi has no ask tool of its own. This one asks each question through pi's own dialogs, so
 * that `compass agent-bridge --protocol rpc -- pi --mode rpc` answers them from Compass (the
 * bridge reads the call's arguments as one Ask: compass_bridge/omp/pi_ask.py), and a person
 * at pi's terminal answers them in place. One dialog per question, in order; the title is
 * the question, with " (i/N)" when there are several:
 *
 * - no options: `input` (free text);
 * - exactly the options "Yes" and "No" (single-select): `confirm`;
 * - options (single-select): `select` of the labels and "Other (type your own)"; "Other"
 *   opens an `editor` for the text;
 * - options with `multi`: `select` of the labels marked "[ ] " / "[x] ", "Done" and "Other
 *   (type your own)", once per pick (a pick toggles its option) until "Done" or "Other".
 *
 * The model reads `User answers:` and one line per question: `id: Label` (a pick, or Yes /
 * No), `id: "text"` (free text, as a JSON string), `id: ["A", "B"]` (the picks of a
 * multi-select), `id: ["A"], other: "text"`. A dismissed dialog ends the call with an error.
 * Install: copy this file into ~/.pi/agent/extensions/ or run `pi -e PATH` (docs/agents/pi.md).
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

const OTHER = "Other (type your own)";
const DONE = "Done";

interface Option {
	label: string;
	description?: string;
}

interface Question {
	id: string;
	question: string;
	header?: string;
	options: Option[];
	multi?: boolean;
	recommended?: number;
}

interface Answer {
	id: string;
	selected: string[];
	text?: string;
}

// Plain JSON Schema (pi validates it as is): the fields of oh-my-pi's ask tool.
const parameters = {
	type: "object",
	required: ["questions"],
	properties: {
		questions: {
			type: "array",
			minItems: 1,
			items: {
				type: "object",
				required: ["id", "question", "options"],
				properties: {
					id: { type: "string", description: "Key of this question's answer" },
					question: { type: "string", description: "The question to ask" },
					header: { type: "string", description: "A short label shown with it" },
					options: {
						type: "array",
						description: "Choices; empty for a free-text answer; exactly Yes and No for a yes/no question",
						items: {
							type: "object",
							required: ["label"],
							properties: { label: { type: "string" }, description: { type: "string" } },
						},
					},
					multi: { type: "boolean", description: "More than one option may be chosen" },
					recommended: { type: "integer", description: "Index of the recommended option" },
				},
			},
		},
	},
} as const;

class Dismissed extends Error {}

export default function askUser(pi: ExtensionAPI) {
	pi.registerTool({
		name: "ask_user",
		label: "Ask user",
		description:
			"Ask the user one or more questions and wait for the answers. Give options to choose from " +
			"(the user may also type their own answer), no options for a free-text answer, or exactly " +
			'the options "Yes" and "No" for a yes/no question.',
		parameters: parameters as any,
		executionMode: "sequential",

		async execute(_toolCallId, params, signal, _onUpdate, ctx) {
			const questions = (params as { questions: Question[] }).questions;
			const opts = { signal };
			// A dialog's answer; undefined (dismissed, or the run aborted) ends the call.
			const got = <T>(value: T | undefined): T => {
				if (signal?.aborted || value === undefined) throw new Dismissed("The user dismissed the question");
				return value;
			};
			const answers: Answer[] = [];
			for (const [index, q] of questions.entries()) {
				const title = questions.length > 1 ? `${q.question} (${index + 1}/${questions.length})` : q.question;
				const labels = q.options.map((o) => o.label);
				const answer: Answer = { id: q.id, selected: [] };
				if (labels.length === 0) {
					answer.text = got(await ctx.ui.input(title, undefined, opts));
				} else if (!q.multi && labels.length === 2 && labels[0] === "Yes" && labels[1] === "No") {
					const yes = await ctx.ui.confirm(title, "", opts);
					answer.selected = [got(signal?.aborted ? undefined : yes) ? "Yes" : "No"];
				} else if (!q.multi) {
					const choice = got(await ctx.ui.select(title, [...labels, OTHER], opts));
					if (choice === OTHER) answer.text = got(await ctx.ui.editor(title));
					else answer.selected = [choice];
				} else {
					const picked: number[] = []; // in the order picked
					for (;;) {
						const shown = labels.map((label, i) => (picked.includes(i) ? "[x] " : "[ ] ") + label);
						const choice = got(await ctx.ui.select(title, [...shown, DONE, OTHER], opts));
						if (choice === DONE) break;
						if (choice === OTHER) {
							answer.text = got(await ctx.ui.editor(title));
							break;
						}
						const i = shown.indexOf(choice);
						if (i >= 0) picked.includes(i) ? picked.splice(picked.indexOf(i), 1) : picked.push(i);
					}
					answer.selected = picked.map((i) => labels[i]);
				}
				answers.push(answer);
			}
			const lines = answers.map((a, i) => `${a.id}: ${format(a, questions[i])}`);
			return {
				content: [{ type: "text", text: `User answers:\n${lines.join("\n")}` }],
				details: { answers },
			};
		},
	});
}

function format(answer: Answer, question: Question): string {
	const text = answer.text === undefined ? undefined : JSON.stringify(answer.text);
	if (!question.multi) return text ?? answer.selected[0] ?? "";
	const picks = `[${answer.selected.map((label) => JSON.stringify(label)).join(", ")}]`;
	return text === undefined ? picks : `${picks}, other: ${text}`;
}
