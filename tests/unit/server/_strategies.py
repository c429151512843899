"""Hypothesis strategies for blocks, asks and answers (shared by unit and integration tests)."""

from __future__ import annotations

from hypothesis import strategies as st

from gen.compass.v1 import comms_pb2

#: Text PostgreSQL can store: no NUL, no unpaired surrogates.
safe_text = st.text(
    alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
    max_size=20,
)
#: Small id alphabet so that collisions (duplicates) and overlaps are common.
short_ids = st.text(alphabet="abxy01", min_size=1, max_size=3)


@st.composite
def ask_options(draw: st.DrawFn) -> list[comms_pb2.AskOption]:
    ids = draw(st.lists(short_ids, unique=True, max_size=4))
    return [
        comms_pb2.AskOption(
            id=option_id,
            label=draw(safe_text),
            description=draw(safe_text),
            preview=draw(safe_text),
        )
        for option_id in ids
    ]


@st.composite
def ask_questions(draw: st.DrawFn, question_id: str) -> comms_pb2.AskQuestion:
    question = comms_pb2.AskQuestion(
        question_id=question_id,
        question=draw(safe_text),
        header=draw(safe_text),
        options=draw(ask_options()),
        allow_multiple=draw(st.booleans()),
    )
    recommended = draw(st.none() | st.integers(min_value=-(2**31), max_value=2**31 - 1))
    if recommended is not None:
        question.recommended = recommended
    # Any FreeText but REFUSED on a question without options (it would be unanswerable).
    refusable = [comms_pb2.FREE_TEXT_REFUSED] if question.options else []
    question.free_text = draw(
        st.sampled_from(
            [
                comms_pb2.FREE_TEXT_UNSPECIFIED,
                comms_pb2.FREE_TEXT_ACCEPTED,
                comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS,
                *refusable,
            ]
        )
    )
    return question


@st.composite
def asks(draw: st.DrawFn, *, ask_id: str = "") -> comms_pb2.Ask:
    """A valid, unanswered ask: 1-4 questions with distinct ids, each with distinct option ids."""
    qids = draw(st.lists(short_ids, min_size=1, max_size=4, unique=True))
    return comms_pb2.Ask(ask_id=ask_id, questions=[draw(ask_questions(qid)) for qid in qids])


@st.composite
def block_sets(draw: st.DrawFn, *, minted: bool) -> list[comms_pb2.MessageBlock]:
    """A valid block set; asks carry distinct ask ids when `minted`, else empty ones."""
    blocks: list[comms_pb2.MessageBlock] = []
    for index in range(draw(st.integers(min_value=0, max_value=4))):
        if draw(st.booleans()):
            blocks.append(comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text=draw(safe_text))))
        else:
            ask_id = f"ask_{index}" if minted else ""
            blocks.append(comms_pb2.MessageBlock(ask=draw(asks(ask_id=ask_id))))
    return blocks


@st.composite
def answer_sets(draw: st.DrawFn, ask: comms_pb2.Ask) -> list[comms_pb2.AskQuestionAnswer]:
    """Answers for `ask` that are often valid and often wrong in one or more ways."""
    answers: list[comms_pb2.AskQuestionAnswer] = []
    for question in ask.questions:
        offered = [option.id for option in question.options]
        pool = [*offered, "zz"] if draw(st.integers(0, 4)) == 0 else offered
        chosen = draw(st.lists(st.sampled_from(pool), max_size=3)) if pool else []
        if not question.allow_multiple and draw(st.booleans()):
            chosen = chosen[:1]
        custom_text = draw(st.sampled_from(["", "", "other text"]))
        answers.append(
            comms_pb2.AskQuestionAnswer(
                question_id=question.question_id, chosen_option_ids=chosen, custom_text=custom_text
            )
        )
    answers = draw(st.permutations(answers))
    mutation = draw(st.sampled_from(["none", "none", "none", "drop", "repeat", "unknown", "empty"]))
    if mutation == "drop" and answers:
        answers.pop(draw(st.integers(0, len(answers) - 1)))
    elif mutation == "repeat" and answers:
        answers.append(answers[draw(st.integers(0, len(answers) - 1))])
    elif mutation == "unknown":
        answers.append(comms_pb2.AskQuestionAnswer(question_id="unknown-q"))
    elif mutation == "empty":
        answers.append(comms_pb2.AskQuestionAnswer(question_id=""))
    return answers
