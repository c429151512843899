"""Transcripts of the real runtime: oh-my-pi (`@oh-my-pi/pi-coding-agent`) 18.2.3 from npm,
run by bun as `omp --mode rpc-ui --model scripted/scripted-model --no-session` with HOME in a
temp dir, its model a scripted OpenAI-compatible server that made one ask tool call (call id
`call_ask_1`) and then said "thanks". A scripted host sent the `prompt` (and, in
`askdialog`, first `set_ask_dialog`) and answered each dialog as listed.

One JSON object per line, in the order the host saw them: `{"runtime": FRAME}` (a line of the
runtime's stdout, verbatim) or `{"host": FRAME}` (a line the host wrote). Left out, being
large and of no use here: `message_update`, `available_commands_update`, `agent_end` and the
`setWidget` notices. The cases:

- gallery: the runtime's 2-question gallery ask; "Postgres (Recommended)", then two picks and
  the (not shown) done label "✔ Done selecting".
- gallery-other: "Other" + "Oracle"; one pick, then "Other" + "Passkeys too".
- single-multi: a one-question multi-select: two picks, then the shown done label.
- dis: a recommended "Retry now" beside a literal "Retry now (Recommended)" (disambiguated).
- skip-empty: "Other" + empty text on a one-question single-select.
- cancel: a cancelled select (the run aborts).
- askdialog: `set_ask_dialog` refused as "Unknown command" (no id); then a plain pick.
- wrong-done: "[ok] Done selecting" sent where the runtime's done label is "✔ Done selecting":
  taken as an option, sent again to unselect it, then the right one.
- timed-out: a multi-select ended with `cancelled` + `timedOut`.
- skip-multi-q: "Other" + empty text, then the done label with nothing picked (2 questions).
- empty-multi-one: the done label with nothing picked in a one-question ask (the run aborts).
- odd-labels: `\r` in ids, texts and labels, a label already ending in " (Recommended)" at
  the recommended index, a question with no options, a multi-select whose text looks like
  the runtime's own "(1 selected) " and "(1/2)" decorations.

`recorded/pi/` holds pi's (`@mariozechner/pi-coding-agent` 0.73.1, `pi --mode rpc` with
Compass's ask_user extension and the test bed's gate.ts), written by
`python -m tests.realagent.pi_record` (its docstring lists the cases); `load("pi/four")`.
They are not in NAMES (omp's ask port replays those).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).resolve().parent / "recorded"
NAMES = sorted(path.stem for path in RECORDED.glob("*.jsonl"))

Frame = dict[str, Any]


@dataclass(frozen=True)
class Recording:
    name: str
    lines: list[tuple[str, Frame]]
    """("runtime" | "host", frame), in order."""

    def runtime(self) -> list[Frame]:
        return [frame for side, frame in self.lines if side == "runtime"]

    def dialogs(self) -> list[Frame]:
        """The runtime's select/editor requests, in order."""
        return [
            frame
            for frame in self.runtime()
            if frame.get("type") == "extension_ui_request"
            and frame.get("method") in {"select", "editor"}
        ]

    def replies(self) -> list[Frame]:
        """The host's `extension_ui_response` frames, in order."""
        return [
            frame
            for side, frame in self.lines
            if side == "host" and frame.get("type") == "extension_ui_response"
        ]

    def questions(self) -> list[dict[str, Any]]:
        (start,) = [f for f in self.runtime() if f.get("type") == "tool_execution_start"]
        return start["args"]["questions"]

    def tool_end(self) -> Frame:
        (end,) = [f for f in self.runtime() if f.get("type") == "tool_execution_end"]
        return end


def load(name: str) -> Recording:
    lines: list[tuple[str, Frame]] = []
    for raw in (RECORDED / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
        ((side, frame),) = json.loads(raw).items()
        lines.append((side, frame))
    return Recording(name=name, lines=lines)
