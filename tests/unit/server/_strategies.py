"""Hypothesis strategies for blocks, asks and answers (shared by unit and integration tests)."""

from __future__ import annotations

from hypothesis import strategies as st

from compass_server.domain import ask_text
from compass_server.domain.email_reply import normalize_label
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
    question.answer_required = draw(st.booleans())
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


# ---------------------------------------------------------------------------------------------
# The email reply grammar (domain/email_reply.py)

_LABEL_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
labels = st.one_of(
    st.text(_LABEL_CHARS, max_size=12),
    st.integers(0, 12).map(str),  # digits-only labels
    st.sampled_from(["a: b", "1, 2", "x + y", "skip", "Decline", "  Spaced  out ", "É", "\uff12"]),
)
_WORD_CHARS = st.characters(
    blacklist_categories=("Cs", "Cc", "Cf", "Zl", "Zp"), blacklist_characters="\x00"
)


@st.composite
def email_asks(draw: st.DrawFn) -> comms_pb2.Ask:
    """An ask for the email grammar: 1-6 questions of 0-8 options with any labels (digits,
    colons, commas, "skip"), any kind, any free-text rule."""
    questions: list[comms_pb2.AskQuestion] = []
    for index in range(draw(st.integers(1, 6))):
        count = draw(st.integers(0, 8))
        question = comms_pb2.AskQuestion(
            question_id=f"q{index}",
            question=draw(st.text(_LABEL_CHARS, min_size=1, max_size=20)),
            options=[
                comms_pb2.AskOption(id=f"o{index}.{n}", label=draw(labels)) for n in range(count)
            ],
            allow_multiple=draw(st.booleans()),
            answer_required=draw(st.booleans()),
            free_text=draw(
                st.sampled_from(
                    [
                        comms_pb2.FREE_TEXT_ACCEPTED,
                        comms_pb2.FREE_TEXT_REFUSED,
                        comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS,
                        comms_pb2.FREE_TEXT_UNSPECIFIED,
                    ]
                )
                if count
                else st.sampled_from(
                    [comms_pb2.FREE_TEXT_ACCEPTED, comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS]
                )
            ),
        )
        if count and draw(st.booleans()):
            question.recommended = draw(st.integers(0, count - 1))
        questions.append(question)
    return comms_pb2.Ask(ask_id="ask_p", questions=questions)


def _label_reply(question: comms_pb2.AskQuestion, index: int) -> str | None:
    """The label of option `index` as a reply that reads as that option, or None."""
    label = question.options[index].label
    norm = normalize_label(label)
    same = [o for o in question.options if normalize_label(o.label) == norm]
    flat = ask_text.one_line(label)
    if not norm or len(same) > 1 or normalize_label(flat) != norm:
        return None
    if norm.removesuffix(".").replace(",", " ").replace(" ", "").isdigit() or norm.startswith(
        "decline"
    ):
        return None  # numbers are option numbers; "decline..." may decline
    return flat


@st.composite
def email_replies(
    draw: st.DrawFn, ask: comms_pb2.Ask
) -> tuple[str, list[comms_pb2.AskQuestionAnswer]]:
    """A reply the grammar describes for `ask` and the answers it means."""
    several = len(ask.questions) > 1
    lines: list[str] = []
    expected: list[comms_pb2.AskQuestionAnswer] = []
    labels_norm = {normalize_label(o.label) for qn in ask.questions for o in qn.options}
    for number, question in enumerate(ask.questions, start=1):
        count = len(question.options)
        free = ask_text.takes_free_text(question)
        both = (
            count
            and question.allow_multiple
            and question.free_text
            in (comms_pb2.FREE_TEXT_ACCEPTED, comms_pb2.FREE_TEXT_UNSPECIFIED)
        )
        kinds = ["pick"] * bool(count) + ["text"] * free + ["both"] * bool(both)
        skip_is_label = "skip" in {normalize_label(o.label) for o in question.options}
        if not question.answer_required and (several or not skip_is_label):
            kinds.append("skip")
        kind = draw(st.sampled_from(kinds))
        answer = comms_pb2.AskQuestionAnswer(question_id=question.question_id)
        value: str | None = None
        if kind == "skip" and not skip_is_label:
            value = draw(st.sampled_from([None, "skip", "SKIP"])) if several else "skip"
        if kind in ("pick", "both"):
            most = count if question.allow_multiple else 1
            picks = draw(
                st.lists(st.integers(0, count - 1), min_size=1, max_size=most, unique=True)
            )
            answer.chosen_option_ids.extend(question.options[i].id for i in picks)
            value = draw(st.sampled_from([", ", ",", " , "])).join(str(i + 1) for i in picks)
            if kind == "pick" and len(picks) == 1 and draw(st.booleans()):
                value = _label_reply(question, picks[0]) or value
        if kind in ("text", "both"):
            first = ("my " + draw(st.text(_WORD_CHARS, max_size=30))).strip()
            rest = draw(st.lists(st.text(_WORD_CHARS, min_size=1, max_size=20), max_size=2))
            words_text = "\n".join([first, *(f"and {line}".strip() for line in rest)])
            if {normalize_label(words_text), normalize_label(first)} & labels_norm:
                words_text = "my own words"  # a label would be read as that option
            answer.custom_text = words_text
            value = words_text if kind == "text" else f"{value} + {words_text}"
        expected.append(answer)
        if value is not None:
            lines.append(f"{number}: {value}" if several else value)
    if several:
        lines = draw(st.permutations(lines))
    return "\n".join(lines), expected
