"""What Compass sends by email (compass_server/domain/email_text.py): the ask's form as text
and HTML, the subject that stays one line, escaping, and the two answers to a reply."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given, strategies as st

from compass_core.ask_status import STATUS_NAMES
from compass_server.domain import ask_text
from compass_server.domain.email_reply import grammar_help
from compass_server.domain.email_text import (
    MAX_SUBJECT_CHARS,
    MailBody,
    ask_mail,
    ended_mail,
    ended_sentence,
    how_it_ended,
    not_understood_mail,
    reply_subject,
)
from gen.compass.v1 import comms_pb2

LINK = "https://compass.example.com/#/ask/ask_1"


def q(
    qid: str, text: str, *labels: str, multi: bool = False, **fields: object
) -> comms_pb2.AskQuestion:
    question = comms_pb2.AskQuestion(
        question_id=qid,
        question=text,
        options=[
            comms_pb2.AskOption(id=str(i), label=label, description=f"about {label}")
            for i, label in enumerate(labels)
        ],
        allow_multiple=multi,
    )
    for name, value in fields.items():
        setattr(question, name, value)
    return question


ASK = comms_pb2.Ask(
    ask_id="ask_1",
    questions=[
        q("db", "Which database?", "Postgres", "SQLite", recommended=0),
        q("auth", "Which sign-in?", "Password", "SSO", multi=True),
        q(
            "pick",
            "Left or right?",
            "left",
            "right",
            free_text=comms_pb2.FREE_TEXT_REFUSED,
            answer_required=True,
        ),
        q("why", "Why?"),
    ],
)


def test_the_ask_mail() -> None:
    mail = ask_mail(ASK, asker="Coding Agent", channel="general", link=LINK)
    assert mail.subject == "[Compass] Coding Agent: Which database?"
    lines = mail.text.split("\n")
    assert lines[0] == "Coding Agent asks in #general:"
    for expected in [
        "1. Which database?",
        "   (choose one, free text allowed)",
        "      1. Postgres (recommended)",
        "         about Postgres",
        "      2. SQLite",
        "2. Which sign-in?",
        "   (choose one or more, free text allowed)",
        "3. Left or right?",
        "   (choose one, options only, answer required)",
        "4. Why?",
        "   (answer in your own words)",
        f"Answer in the browser: {LINK}",
    ]:
        assert expected in lines
    assert grammar_help(ASK) in mail.text
    assert f'<a href="{LINK}">' in mail.html
    assert "1. Postgres (recommended)" in mail.html
    assert "choose one or more, free text allowed" in mail.html


def test_one_question_is_not_numbered() -> None:
    one = comms_pb2.Ask(questions=[q("db", "Which database?", "Postgres", "SQLite")])
    mail = ask_mail(one, asker="", channel="general", link=LINK)
    assert mail.subject == "[Compass] An agent: Which database?"
    assert "\nWhich database?\n(choose one, free text allowed)\n   1. Postgres\n" in mail.text
    assert "1. Which database?" not in mail.text


def test_the_subject_is_clipped_and_one_line() -> None:
    long = comms_pb2.Ask(questions=[q("x", "Why\r\nBcc: victim@example.com\n" + "y" * 300)])
    mail = ask_mail(long, asker="Evil\r\nX-Injected: 1", channel="c\n", link=LINK)
    assert "\r" not in mail.subject
    assert "\n" not in mail.subject
    assert len(mail.subject) == MAX_SUBJECT_CHARS
    assert mail.subject.startswith("[Compass] Evil X-Injected: 1: Why Bcc: victim@example.com y")
    assert mail.subject.endswith(ask_text.ELLIPSIS)


def test_a_link_that_is_not_http_is_only_text() -> None:
    mail = ask_mail(ASK, asker="a", channel="c", link="javascript:alert(1)")
    assert "<a " not in mail.html
    assert "javascript:alert(1)" in mail.html


def test_not_understood_says_what_and_shows_the_form_again() -> None:
    mail = not_understood_mail(ASK, ["Question 1 has no option 7 (it has 1-2)."], link=LINK)
    assert mail.subject == "[Compass] Not understood: Which database?"
    assert "nothing was answered" in mail.text
    assert "- Question 1 has no option 7 (it has 1-2)." in mail.text
    assert "      1. Postgres (recommended)" in mail.text
    assert grammar_help(ASK) in mail.text
    assert "<li>Question 1 has no option 7 (it has 1-2).</li>" in mail.html


@pytest.mark.parametrize(
    ("outcome", "by", "title", "sentence"),
    [
        ("answered", "Ada", "Already answered", "This ask was already answered by Ada."),
        ("answered", "", "Already answered", "This ask was already answered."),
        ("declined", "Ada", "Declined", "This ask was declined by Ada."),
        ("withdrawn", "", "Withdrawn", "This ask was withdrawn by the agent: it stopped waiting for an answer."),
        ("timed_out", "", "Timed out", "This ask timed out: the agent went on without an answer."),
        ("expired", "", "Expired", "This ask expired before anyone answered it."),
        ("pending", "", "Closed", "This ask is no longer open."),
        ("nonsense", "", "Closed", "This ask is no longer open."),
    ],
)  # fmt: skip
def test_ended_says_how_and_by_whom(outcome: str, by: str, title: str, sentence: str) -> None:
    mail = ended_mail(ASK, outcome=outcome, by=by, link=LINK)
    assert mail.subject == f"[Compass] {title}: Which database?"
    assert mail.text.startswith(f"{sentence} Your reply was not used.")
    assert LINK in mail.text


def test_an_answer_to_a_reply_stays_in_its_thread() -> None:
    theirs = "Re: [Compass] Coding Agent: Which database?"
    assert not_understood_mail(ASK, ["x."], link=LINK, replying_to=theirs).subject == theirs
    assert ended_mail(ASK, outcome="answered", by="", link=LINK, replying_to="AW: x").subject == (
        "AW: x"
    )
    assert reply_subject("[Compass] Coder: Which?\r\nBcc: v@e.com") == (
        "Re: [Compass] Coder: Which? Bcc: v@e.com"
    )
    assert reply_subject("  ") == ""
    assert len(reply_subject("x" * 500)) == MAX_SUBJECT_CHARS


def test_how_a_stored_ask_ended() -> None:
    answered = comms_pb2.Ask(status=comms_pb2.ASK_STATUS_ANSWERED, answered_by_name="Ada")
    assert how_it_ended(answered) == ("answered", "Ada")
    declined = comms_pb2.Ask(status=comms_pb2.ASK_STATUS_DECLINED, closed_by_name="Bob")
    assert how_it_ended(declined) == ("declined", "Bob")
    assert how_it_ended(comms_pb2.Ask(status=comms_pb2.ASK_STATUS_EXPIRED)) == ("expired", "")
    outcome, by = how_it_ended(answered)
    assert ended_mail(answered, outcome=outcome, by=by, link=LINK).text.startswith(
        "This ask was already answered by Ada."
    )


def test_every_final_status_has_its_own_words() -> None:
    sentences = {ended_sentence(name, "Ada") for name in STATUS_NAMES.values()}
    assert len(sentences) == len(STATUS_NAMES)  # pending's "no longer open" among them


# ---------------------------------------------------------------------------------------------
# Properties: any agent text stays text

ALLOWED_TAGS = {"html", "head", "meta", "title", "body", "p", "strong", "small", "br", "ul", "li",
                "a", "pre"}  # fmt: skip
ALLOWED_ATTRIBUTES = {"charset", "style", "href"}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: dict[str, str | None] = {}
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


any_text = st.text(max_size=40)


@st.composite
def any_asks(draw: st.DrawFn) -> comms_pb2.Ask:
    questions = []
    for index in range(draw(st.integers(1, 4))):
        question = comms_pb2.AskQuestion(
            question_id=f"q{index}",
            question=draw(any_text.filter(lambda t: "\x00" not in t and not _surrogates(t))),
            header=draw(st.sampled_from(["", "Header"])),
            allow_multiple=draw(st.booleans()),
        )
        for n in range(draw(st.integers(0, 4))):
            label = draw(any_text.filter(lambda t: not _surrogates(t)))
            description = draw(any_text.filter(lambda t: not _surrogates(t)))
            question.options.append(
                comms_pb2.AskOption(id=str(n), label=label, description=description)
            )
        questions.append(question)
    return comms_pb2.Ask(ask_id="a", questions=questions)


def _surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _bodies(ask: comms_pb2.Ask, asker: str, problem: str) -> list[MailBody]:
    return [
        ask_mail(ask, asker=asker, channel=asker, link=LINK),
        not_understood_mail(ask, [problem], link=LINK, replying_to=asker),
        ended_mail(ask, outcome="answered", by=asker, link=LINK, replying_to=problem),
    ]


@given(ask=any_asks(), asker=any_text.filter(lambda t: not _surrogates(t)), problem=any_text)
def test_subjects_are_one_line_and_html_escapes_every_agent_string(
    ask: comms_pb2.Ask, asker: str, problem: str
) -> None:
    for index, mail in enumerate(_bodies(ask, asker, problem)):
        assert mail.subject == mail.subject.strip()
        assert len(mail.subject.splitlines()) == 1
        assert not any(c in mail.subject for c in "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
        assert len(mail.subject) <= MAX_SUBJECT_CHARS
        page = _Page()
        page.feed(mail.html)
        page.close()
        assert page.tags <= ALLOWED_TAGS
        assert set(page.attributes) <= ALLOWED_ATTRIBUTES
        assert page.attributes.get("href", LINK) == LINK  # the only link; nothing loaded
        shown = "".join(page.text)
        if index == 2:
            continue  # the ended mail shows no form
        for question in ask.questions:
            for option in question.options:
                # Every option's words are in the page as text (on one line).
                assert ask_text.one_line(option.label) in shown.replace("\n", " ") or not (
                    ask_text.one_line(option.label)
                )
