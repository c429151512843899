"""Compass's pi extension `ask_user` (compass_bridge/omp/pi_extension/ask_user.ts) in pi's RPC
mode, ported to Python as a test oracle: the dialogs it opens (as pi's rpc-mode writes them:
`select` {title, options}, `confirm` {title, message}, `input` {title}, `editor` {title}) and
what the tool hands the model. test_pi.py checks this port against the real pi's recordings
(tests/bridge/omp/recorded/pi/), then drives the bridge against it with generated asks.

Written from the TypeScript, independently of compass_bridge/omp/pi_ask.py, so that the two
can check each other. `ask_user(questions)` is a generator: it yields each
`extension_ui_request` and is sent the host's `extension_ui_response`; it returns the
tool's `Outcome`.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Generator

OTHER = "Other (type your own)"
DONE = "Done"
DISMISSED = "The user dismissed the question"

Frame = dict[str, Any]


@dataclass
class Outcome:
    is_error: bool
    text: str
    details: dict[str, Any]


class _DismissedError(Exception):
    pass


def _value(reply: Frame) -> str:
    if reply.get("cancelled") or not isinstance(reply.get("value"), str):
        raise _DismissedError
    return reply["value"]


def ask_user(questions: list[dict[str, Any]]) -> Generator[Frame, Frame, Outcome]:
    ids = (f"pi-{n}" for n in itertools.count(1))

    def request(method: str, title: str, **fields: Any) -> Frame:
        return {
            "type": "extension_ui_request",
            "id": next(ids),
            "method": method,
            "title": title,
            **fields,
        }

    answers: list[dict[str, Any]] = []
    try:
        for index, q in enumerate(questions):
            title = (
                f"{q['question']} ({index + 1}/{len(questions)})"
                if len(questions) > 1
                else q["question"]
            )
            labels = [o["label"] for o in q["options"]]
            answer: dict[str, Any] = {"id": q["id"], "selected": []}
            if not labels:
                answer["text"] = _value((yield request("input", title)))
            elif not q.get("multi") and labels == ["Yes", "No"]:
                reply = yield request("confirm", title, message="")
                yes = reply.get("confirmed") is True and not reply.get("cancelled")
                answer["selected"] = ["Yes" if yes else "No"]
            elif not q.get("multi"):
                choice = _value((yield request("select", title, options=[*labels, OTHER])))
                if choice == OTHER:
                    answer["text"] = _value((yield request("editor", title)))
                else:
                    answer["selected"] = [choice]
            else:
                picked: list[int] = []
                while True:
                    shown = [
                        ("[x] " if i in picked else "[ ] ") + label
                        for i, label in enumerate(labels)
                    ]
                    choice = _value((yield request("select", title, options=[*shown, DONE, OTHER])))
                    if choice == DONE:
                        break
                    if choice == OTHER:
                        answer["text"] = _value((yield request("editor", title)))
                        break
                    if choice in shown:
                        i = shown.index(choice)
                        picked.remove(i) if i in picked else picked.append(i)
                answer["selected"] = [labels[i] for i in picked]
            answers.append(answer)
    except _DismissedError:
        return Outcome(is_error=True, text=DISMISSED, details={})
    lines = [f"{a['id']}: {summary(a, q)}" for a, q in zip(answers, questions, strict=True)]
    return Outcome(
        is_error=False, text="User answers:\n" + "\n".join(lines), details={"answers": answers}
    )


def summary(answer: dict[str, Any], question: dict[str, Any]) -> str:
    """One question's line (after `id: `), as the extension's `format`."""
    text = json.dumps(answer["text"], ensure_ascii=False) if "text" in answer else None
    if not question.get("multi"):
        return text if text is not None else (answer["selected"] or [""])[0]
    picks = (
        "[" + ", ".join(json.dumps(label, ensure_ascii=False) for label in answer["selected"]) + "]"
    )
    return picks if text is None else f"{picks}, other: {text}"
