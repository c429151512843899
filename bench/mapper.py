"""EventMapper throughput on the runtime's 2-question ask, against floors from the same run.

Run from the repository root:

    .venv/bin/python -m bench.mapper            # asks/s for each side, and the ratios
    .venv/bin/python -m bench.mapper --check    # also exits 1 when mapper/floor > 1.5x

The payload is the gallery ask (tests/fixtures/events/gallery-ask-fixture.json, the
runtime's own example): 2 questions, 7 options. One counted event = one ask tool call
turned into one frame. What each side does per counted event:

- mapper: `EventMapper.map` on an assistant `message_start` (opens a fresh block set and
  numbers its client_message_id), then `EventMapper.map` on the ask's
  `tool_execution_start`: event dispatch, runtime narrowing of the decoded JSON args
  (an `isinstance` check on every value read), building the Ask into the open block set,
  copying the full block set out as the frame's MessageUpdated, and wrapping it in a
  ConversationUpdated. The message_start is charged to the mapper, not counted as an event.
- floor (the target's denominator): the identical MessageUpdated with the same snapshot
  semantics, from the same decoded args taken as already validated: open a block set
  (a new MessageUpdated with a client_message_id), read the same dicts by key and build
  the same Ask into it with no checks at all, then hand out an independent copy of the full
  block set. No events, no narrowing, no wrapper object. mapper/floor is therefore what
  runtime narrowing and the event plumbing add to producing the frames.
- bare build (for transparency): the least work that yields such a message: the
  MessageUpdated built from values pre-shaped into tuples, without a block set or a copy.

Every side builds protobuf messages the same way, the fastest found for upb here (field
assignment into `add()`ed children, defaults skipped, option ids indexed from one
precomputed tuple; keyword constructors are about 2.7x slower, and zip() given any keyword
argument takes a slow path), so the ratios measure what the mapper adds, not a slower way to
build messages. Before timing, the script checks that all sides produce equal messages.

Rounds are interleaved; bench/_timing.py says how best/median and the ratios are taken.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench._timing import cost_ratio, measure, report
from compass_agent import ConversationUpdated, EventMapper
from compass_agent.limits import MAX_OPTIONS_PER_QUESTION
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence

ROOT = Path(__file__).resolve().parent.parent
GALLERY = ROOT / "tests" / "fixtures" / "events" / "gallery-ask-fixture.json"
TARGET = 1.5
OPTION_IDS = tuple(str(index) for index in range(MAX_OPTIONS_PER_QUESTION))

# Pre-shaped values for the bare build:
# (id, label, description, preview) and
# (question_id, question, header, allow_multiple, recommended, options).
OptionValues = tuple[str, str, str, str]
QuestionValues = tuple[str, str, str, bool, int | None, tuple[OptionValues, ...]]


def build_floor(client_message_id: str, args: Any) -> comms_pb2.MessageUpdated:
    """The floor: a block set holding the ask built from trusted args, copied out."""
    block_set = comms_pb2.MessageUpdated()
    block_set.client_message_id = client_message_id
    add_question = block_set.blocks.add().ask.questions.add
    for item in args["questions"]:
        question = add_question()
        question.question_id = item["id"]
        question.question = item["question"]
        header = item.get("header")
        if header:
            question.header = header
        if item.get("multi"):
            question.allow_multiple = True
        recommended = item.get("recommended")
        if recommended is not None:
            question.recommended = recommended
        add_option = question.options.add
        for j, entry in enumerate(item["options"]):
            option = add_option()
            option.id = OPTION_IDS[j]
            option.label = entry["label"]
            description = entry.get("description")
            if description:
                option.description = description
            preview = entry.get("preview")
            if preview:
                option.preview = preview
    snapshot = comms_pb2.MessageUpdated()
    snapshot.CopyFrom(block_set)
    return snapshot


def build_bare(
    client_message_id: str, questions: Sequence[QuestionValues]
) -> comms_pb2.MessageUpdated:
    """The bare build: the message straight from pre-shaped values, nothing else."""
    frame = comms_pb2.MessageUpdated()
    frame.client_message_id = client_message_id
    add_question = frame.blocks.add().ask.questions.add
    for question_id, text, header, allow_multiple, recommended, options in questions:
        question = add_question()
        question.question_id = question_id
        question.question = text
        if header:
            question.header = header
        if allow_multiple:
            question.allow_multiple = True
        if recommended is not None:
            question.recommended = recommended
        add_option = question.options.add
        for option_id, label, description, preview in options:
            option = add_option()
            option.id = option_id
            option.label = label
            if description:
                option.description = description
            if preview:
                option.preview = preview
    return frame


def shaped(args: Any) -> tuple[QuestionValues, ...]:
    """The gallery args as tuples for the bare build, made once outside the timing."""
    return tuple(
        (
            q["id"],
            q["question"],
            q.get("header", ""),
            q.get("multi", False),
            q.get("recommended"),
            tuple(
                (OPTION_IDS[j], o["label"], o.get("description", ""), o.get("preview", ""))
                for j, o in enumerate(q["options"])
            ),
        )
        for q in args["questions"]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.mapper", description="EventMapper throughput against its floor."
    )
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per side")
    parser.add_argument("--block", type=float, default=0.05, help="seconds per timed block")
    parser.add_argument("--check", action="store_true", help=f"exit 1 above {TARGET}x")
    options = parser.parse_args(argv)

    args = json.loads(GALLERY.read_text(encoding="utf-8"))["args"]
    start = {"type": "message_start", "message": {"role": "assistant", "content": []}}
    ask = {"type": "tool_execution_start", "toolCallId": "toolu_1", "toolName": "ask", "args": args}
    values = shaped(args)
    mapper = EventMapper(session="bench")

    def run_mapper() -> object:
        mapper.map(start)
        return mapper.map(ask)

    def run_floor() -> object:
        return build_floor("bench-1", args)

    def run_bare() -> object:
        return build_bare("bench-1", values)

    # The same message on every side, or the comparison means nothing.
    fresh = EventMapper(session="bench")
    [frame] = fresh.map(start) + fresh.map(ask)
    assert isinstance(frame, ConversationUpdated)
    assert len(frame.value.blocks[0].ask.questions) == 2
    assert frame.value == run_floor() == run_bare(), "a floor does not build the mapper's frame"

    rates = measure(
        {"mapper": run_mapper, "floor": run_floor, "bare build": run_bare},
        rounds=options.rounds,
        min_block_seconds=options.block,
    )
    best, paired = cost_ratio(rates["mapper"], rates["floor"])
    bare_best, bare_paired = cost_ratio(rates["mapper"], rates["bare build"])
    print("EventMapper: the runtime's 2-question ask (gallery fixture), one frame per ask event")
    print(report(rates, unit="asks/s"))
    print(
        f"  mapper/floor       {best:.2f}x (best vs best), {paired:.2f}x (median per round);"
        f" target <= {TARGET}x"
    )
    print(
        f"  mapper/bare build  {bare_best:.2f}x (best vs best), {bare_paired:.2f}x (median per round)"
    )
    return 1 if options.check and best > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
