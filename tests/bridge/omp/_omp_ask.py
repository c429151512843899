"""oh-my-pi 18.2.3's ask tool in `--mode rpc-ui`, ported to Python as a test oracle.

A line-by-line port of `@oh-my-pi/pi-coding-agent` 18.2.3 src/tools/ask.ts (`AskTool.execute`
without a rich ask dialog, `askSingleQuestion`, `addRecommendedSuffix`,
`formatQuestionResult`, `formatSingleQuestionResponse`), src/tools/render-utils.ts
(`sanitizeCarriageReturns`, `disambiguateDisplayLabels`) and src/modes/rpc/rpc-mode.ts
(`requestRpcSelect`, `requestRpcEditor`, `parseValueDialogResponse`), for what the RPC host
can see: the requests it gets and what the tool reports to the model. Not ported: the
runtime's own dialog timer (no `ask.timeout`), back/forward navigation (the RPC select has
no arrow keys), the editor title's option rows (only its first line, the select title), and
the up-front refusals (reserved or duplicate labels and ids, which never reach a dialog).

It is written independently of compass_bridge/omp/frames.py (which ports the same
display rules), so that the two can check each other; test_dialogs.py checks this port
against the recorded real runtime (tests/bridge/omp/recorded/).

`ask_dialogs(questions)` is a generator: it yields each `extension_ui_request` and is sent
the host's `extension_ui_response`; it returns the tool's `Outcome`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Generator, Iterator

OTHER_OPTION = "Other (type your own)"
RECOMMENDED_SUFFIX = " (Recommended)"
DONE_LABEL = "\u2714 Done selecting"  # `${theme.status.success} Done selecting`, unicode preset

Frame = dict[str, Any]


@dataclass
class Outcome:
    """What the ask tool returned: `is_error` and the text the model reads, and details."""

    is_error: bool
    text: str
    details: dict[str, Any]


@dataclass
class _Selection:
    selected: list[str]
    custom: str | None
    timed_out: bool
    cancelled: bool = False


def sanitize(text: str) -> str:
    if "\r" not in text:
        return text
    return re.sub(r"\r+", " ", text.replace("\r\n", "\n"))


def _disambiguate(raw_labels: list[str], reserved: list[str]) -> list[str]:
    taken = set(reserved)
    out: list[str] = []
    for raw in raw_labels:
        base = sanitize(raw)
        candidate = base
        suffix = 2
        while candidate in taken:
            candidate = f"{base} ({suffix})"
            suffix += 1
        taken.add(candidate)
        out.append(candidate)
    return out


def _with_recommended(labels: list[str], recommended: int | None) -> list[str]:
    if recommended is None or recommended < 0 or recommended >= len(labels):
        return list(labels)
    return [
        label + RECOMMENDED_SUFFIX
        if i == recommended and not label.endswith(RECOMMENDED_SUFFIX)
        else label
        for i, label in enumerate(labels)
    ]


class _Ids:
    def __init__(self) -> None:
        self._next: Iterator[int] = itertools.count(1)

    def __call__(self) -> str:
        return f"omp-{next(self._next)}"


def _select(ids: _Ids, title: str, options: list[tuple[str, str | None]]) -> Frame:
    frame: Frame = {
        "type": "extension_ui_request",
        "id": ids(),
        "method": "select",
        "title": title,
        "options": [label for label, _ in options],
    }
    if any(description for _, description in options):
        frame["optionDetails"] = [
            {"description": description} if description else {} for _, description in options
        ]
    return frame


def _editor(ids: _Ids, title: str) -> Frame:
    # The real title continues with the options and "Enter your response:".
    return {
        "type": "extension_ui_request",
        "id": ids(),
        "method": "editor",
        "title": title,
        "promptStyle": True,
    }


def _value(reply: Frame) -> tuple[str | None, bool]:
    """parseValueDialogResponse: (value, timed out)."""
    if reply.get("cancelled"):
        return None, bool(reply.get("timedOut"))
    value = reply.get("value")
    return (value if isinstance(value, str) else None), False


def _auto(labels: list[str], recommended: int | None) -> list[str]:
    if not labels:
        return []
    if recommended is not None and 0 <= recommended < len(labels):
        return [labels[recommended]]
    return [labels[0]]


def _ask_one(
    ids: _Ids, question: dict[str, Any], progress: str | None, done_label: str
) -> Generator[Frame, Frame, _Selection]:
    """askSingleQuestion, with navigation present exactly when `progress` is."""
    text: str = question["question"]
    options: list[tuple[str, str | None]] = [
        (o["label"], (o.get("description") or "").strip() or None) for o in question["options"]
    ]
    labels = [label for label, _ in options]
    recommended: int | None = question.get("recommended")
    title = f"{text} ({progress})" if progress else text
    allow_forward = progress is not None
    selected: list[str] = []
    custom: str | None = None
    timed_out = False
    if question.get("multi"):
        while True:
            shown = list(options)
            if not allow_forward and selected:
                shown.append((done_label, None))
            shown.append((OTHER_OPTION, None))
            prefix = f"({len(selected)} selected) " if selected else ""
            choice, select_timed_out = _value((yield _select(ids, prefix + title, shown)))
            if choice is None:
                if select_timed_out:
                    timed_out = True
                    break
                return _Selection(selected, custom, timed_out, cancelled=True)
            if choice == done_label:
                break
            if choice == OTHER_OPTION:
                typed, _ = _value((yield _editor(ids, prefix + title)))
                if typed is None:
                    continue
                custom = typed
                break
            if choice in selected:
                selected.remove(choice)
            else:
                selected.append(choice)
    else:
        display = _disambiguate(_with_recommended(labels, recommended), [OTHER_OPTION])
        shown = [(d, description) for d, (_, description) in zip(display, options, strict=True)]
        shown.append((OTHER_OPTION, None))
        while True:
            choice, timed_out = _value((yield _select(ids, title, shown)))
            if choice is None:
                if not timed_out:
                    return _Selection(selected, custom, timed_out, cancelled=True)
                break
            if choice == OTHER_OPTION:
                typed, _ = _value((yield _editor(ids, title)))
                if typed is None:
                    continue
                custom = typed
                selected = []
                break
            if choice in display:
                selected = [labels[display.index(choice)]]
            else:
                selected = [choice.removesuffix(RECOMMENDED_SUFFIX)]
            custom = None
            break
    if timed_out and not selected and custom is None:
        selected = _auto(labels, recommended)
    return _Selection(selected, custom, timed_out)


def _question_result(result: dict[str, Any]) -> str:
    if "customInput" in result:
        return f'{result["id"]}: "{result["customInput"]}"'
    if result["selectedOptions"]:
        suffix = " (auto-selected after timeout)" if result.get("timedOut") else ""
        if result["multi"]:
            return f"{result['id']}: [{', '.join(result['selectedOptions'])}]{suffix}"
        return f"{result['id']}: {result['selectedOptions'][0]}{suffix}"
    return f"{result['id']}: []" if result["multi"] else f"{result['id']}: (cancelled)"


def _single_response(selection: _Selection, multi: bool) -> str:
    parts: list[str] = []
    if selection.selected:
        text = (
            f"User selected: {', '.join(selection.selected)}"
            if multi
            else f"User selected: {selection.selected[0]}"
        )
        parts.append(f"{text} (auto-selected after timeout)" if selection.timed_out else text)
    if selection.custom is not None:
        if "\n" in selection.custom:
            indented = "\n".join(f"  {line}" for line in selection.custom.split("\n"))
            parts.append(f"User provided custom input:\n{indented}")
        else:
            parts.append(f"User provided custom input: {selection.custom}")
    if parts:
        return "\n".join(parts)
    return "User did not select any options" if multi else "User cancelled the selection"


_CANCELLED = Outcome(is_error=True, text="Ask tool was cancelled by the user", details={})


def _sanitized(question: dict[str, Any]) -> dict[str, Any]:
    return {
        **question,
        "id": sanitize(question["id"]),
        "question": sanitize(question["question"]),
        "options": [
            {
                **option,
                "label": sanitize(option["label"]),
                **(
                    {"description": sanitize(option["description"])}
                    if "description" in option
                    else {}
                ),
            }
            for option in question["options"]
        ],
    }


def _result(question: dict[str, Any], selection: _Selection) -> dict[str, Any]:
    result: dict[str, Any] = {
        "id": question["id"],
        "question": question["question"],
        "options": [o["label"] for o in question["options"]],
        "multi": bool(question.get("multi", False)),
        "selectedOptions": selection.selected,
    }
    if selection.custom is not None:
        result["customInput"] = selection.custom
    if selection.timed_out:
        result["timedOut"] = True
    return result


def ask_dialogs(
    raw_questions: list[dict[str, Any]], *, done_label: str = DONE_LABEL
) -> Generator[Frame, Frame, Outcome]:
    """The ask tool's dialogs for `raw_questions` (the tool call's arguments); `done_label`
    as the theme's symbol preset makes it (the default preset's by default)."""
    ids = _Ids()
    questions = [_sanitized(q) for q in raw_questions]
    if len(questions) == 1:
        (question,) = questions
        selection = yield from _ask_one(ids, question, None, done_label)
        if not selection.timed_out and (
            selection.cancelled or (not selection.selected and selection.custom is None)
        ):
            return _CANCELLED
        details = _result(question, selection)
        del details["id"]
        multi = bool(question.get("multi", False))
        return Outcome(is_error=False, text=_single_response(selection, multi), details=details)
    results: list[dict[str, Any]] = []
    for index, question in enumerate(questions):
        progress = f"{index + 1}/{len(questions)}"
        selection = yield from _ask_one(ids, question, progress, done_label)
        if selection.cancelled and not selection.timed_out:
            return _CANCELLED
        results.append(_result(question, selection))
    text = "User answers:\n" + "\n".join(_question_result(r) for r in results)
    return Outcome(is_error=False, text=text, details={"results": results})
