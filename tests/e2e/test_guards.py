"""docs/spec.md §4's guard order over real HTTP, and the same visibility rules on the read RPCs.

1 UNAUTHENTICATED -> 2 INVALID_ARGUMENT (malformed) -> 3 NOT_FOUND (missing or not visible,
identical) -> 4 PERMISSION_DENIED (not a participant) -> 5 FAILED_PRECONDITION (already
answered; an identical retry is OK) -> 6 INVALID_ARGUMENT with one field violation per problem
-> 7 OK `{}`. Every case that must stop at step N is also given the faults of the later steps,
so a wrong order shows up as a wrong code.

All tests share one server (module fixtures); each works on asks of its own.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import TYPE_CHECKING

import pytest

from tests.e2e import _connect
from tests.e2e._asks import answer, ask_block, post_ask, question, respond
from tests.e2e._connect import Reply, Violation, call, open_stream

if TYPE_CHECKING:
    import httpx

    from tests._server import SeededWorld

pytestmark = pytest.mark.usefixtures("module_world")

#: A request that fails every later guard too: unknown question, bad option, missing answers.
BAD_ANSWERS = (answer("nope", "9"), answer("db", "0", "1", custom_text="both"))


def random_ask_id() -> str:
    return f"ask_{secrets.token_hex(13)}"


def expect(reply: Reply, code: str, status: int, message: str | None = None) -> None:
    assert (reply.code, reply.status) == (code, status), reply
    if message is not None:
        assert reply.message == message, reply


async def unanswered(http: httpx.AsyncClient, world: SeededWorld, ask_id: str) -> bool:
    reply = await call(http, "GetAsk", {"askId": ask_id}, world.human.token)
    assert reply.ok, reply
    ask = reply.body["ask"]
    assert isinstance(ask, dict)
    return "answeredByAccountId" not in ask and all(
        "chosenOptionIds" not in q and "customText" not in q
        for q in ask["questions"]  # pyright: ignore[reportUnknownVariableType] - JSON
    )


# -- step 1: authentication, before anything about the request -------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Basic YWRhOnNlY3JldA==",
        "Bearer cmp_unknown-token",
        "Bearer not-even-our-prefix",
        "Bearer two words",
        "bearer\tcmp_x",
        "Bearer " + "x" * 600,
    ],
    ids=lambda v: repr(v)[:24],
)
@pytest.mark.parametrize(
    "body",
    [b"{}", b"{not json", b'{"askId": ""}', b'{"askId": "' + b"a" * (2 << 20) + b'"}'],
    ids=["empty", "not-json", "empty-ask-id", "oversize"],
)
async def test_no_valid_token_is_unauthenticated_whatever_the_body(
    http: httpx.AsyncClient, authorization: str | None, body: bytes
) -> None:
    headers = {"content-type": "application/json"}
    if authorization is not None:
        headers["authorization"] = authorization
    reply = _connect.parse_reply(
        await http.post(_connect.path("RespondToAsk"), content=body, headers=headers)
    )
    expect(reply, "unauthenticated", 401)


async def test_a_disabled_account_is_unauthenticated_like_an_unknown_token(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    ask_id = await post_ask(http, module_world.agent.token, module_world.channel_id)
    disabled = await call(
        http,
        "RespondToAsk",
        respond(ask_id, answer("db", "0"), answer("features")),
        module_world.disabled.token,
    )
    unknown = await call(
        http,
        "RespondToAsk",
        respond(ask_id, answer("db", "0"), answer("features")),
        "cmp_" + "x" * 43,
    )
    expect(disabled, "unauthenticated", 401, "invalid token")
    assert disabled.raw == unknown.raw  # nothing tells a disabled account from a made-up one
    assert await unanswered(http, module_world, ask_id)


@pytest.mark.parametrize(
    "method", ["ListChannels", "ListMessages", "GetAsk", "RespondToAsk", "DeclineAsk"]
)
async def test_agent_accounts_may_not_call_comms_service(
    http: httpx.AsyncClient, module_world: SeededWorld, method: str
) -> None:
    for body in ({}, b"{broken"):
        reply = await call(http, method, body, module_world.agent.token)
        expect(
            reply,
            "permission_denied",
            403,
            "agent accounts may not call compass.v1.CommsService",
        )
    async with open_stream(
        http, "WatchChannel", {"channelId": module_world.channel_id}, module_world.agent.token
    ) as stream:
        error = (await stream.end()).error()
    assert error is not None
    assert error["code"] == "permission_denied"


@pytest.mark.parametrize(
    "method", ["AppendMessage", "UpdateMessage", "CloseAsk", "GetChannel", "ReportDelivery"]
)
async def test_human_accounts_may_not_call_agent_service(
    http: httpx.AsyncClient, module_world: SeededWorld, method: str
) -> None:
    reply = await call(
        http, method, {"channelId": module_world.channel_id}, module_world.human.token
    )
    expect(reply, "permission_denied", 403, "human accounts may not call compass.v1.AgentService")
    async with open_stream(
        http, "WatchAsk", {"askId": random_ask_id()}, module_world.human.token
    ) as stream:
        error = (await stream.end()).error()
    assert error == {
        "code": "permission_denied",
        "message": "human accounts may not call compass.v1.AgentService",
    }


# -- step 2: malformed requests, before any lookup -------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"askId": ""}', "ask_id"),
        (b"{}", "ask_id"),
        (b'{"askId": "' + b"a" * 201 + b'"}', "ask_id"),
        (b'{"askId": "x\\u0000y"}', "ask_id"),
        (
            b'{"askId": "x", "answers": [' + b",".join([b'{"questionId": "q"}'] * 101) + b"]}",
            "answers",
        ),
        (
            b'{"askId": "x", "answers": [{"questionId": "db", "customText": "'
            + b"t" * 10_001
            + b'"}]}',
            "answers[0].custom_text",
        ),
        (b"{not json", None),
        (b'{"askId": 7}', None),
        (b'{"askId": "x", "answers": {}}', None),
        (b'{"askId": "x", "bogusField": 1}', None),
        (b"[]", None),
        (b'{"askId": "' + b"a" * (1 << 20) + b'"}', None),  # over the body limit
    ],
    ids=[
        "empty-ask-id",
        "no-ask-id",
        "oversize-ask-id",
        "nul-in-ask-id",
        "too-many-answers",
        "oversize-custom-text",
        "not-json",
        "ask-id-wrong-type",
        "answers-wrong-type",
        "unknown-field",
        "not-an-object",
        "oversize-body",
    ],
)
@pytest.mark.parametrize("caller", ["human", "outsider", "member"])
async def test_malformed_requests_are_invalid_before_any_lookup(
    http: httpx.AsyncClient,
    module_world: SeededWorld,
    body: bytes,
    field: str | None,
    caller: str,
) -> None:
    token = getattr(module_world, caller).token
    reply = await call(http, "RespondToAsk", body, token)
    expect(reply, "invalid_argument", 400)
    if field is not None:
        assert field in [v.field for v in reply.violations()], reply


# -- step 3: visibility ----------------------------------------------------------------------


async def test_an_invisible_ask_is_not_found_exactly_like_a_missing_one(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    ask_id = await post_ask(http, module_world.agent.token, module_world.channel_id)
    outsider = module_world.outsider.token
    for body_of in (
        lambda a: respond(a, answer("db", "0"), answer("features")),  # a valid answer
        lambda a: respond(a, *BAD_ANSWERS),  # and one that would fail step 6
    ):
        invisible = await call(http, "RespondToAsk", body_of(ask_id), outsider)
        missing = await call(http, "RespondToAsk", body_of(random_ask_id()), outsider)
        expect(invisible, "not_found", 404, "ask not found")
        assert invisible.raw == missing.raw
        assert dict(invisible.body) == dict(missing.body)
    # The same for a reader, and once the ask is answered (step 3 comes before step 5).
    await _answer(http, module_world, ask_id)
    for method, body in (
        ("RespondToAsk", respond(ask_id, answer("db", "0"), answer("features"))),
        ("GetAsk", {"askId": ask_id}),
    ):
        invisible = await call(http, method, body, outsider)
        missing = await call(http, method, {**body, "askId": random_ask_id()}, outsider)
        expect(invisible, "not_found", 404, "ask not found")
        assert invisible.raw == missing.raw


async def test_an_invisible_channel_is_not_found_exactly_like_a_missing_one(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    outsider = module_world.outsider.token
    invisible = await call(http, "ListMessages", {"channelId": module_world.channel_id}, outsider)
    missing = await call(http, "ListMessages", {"channelId": "ch_doesnotexist"}, outsider)
    expect(invisible, "not_found", 404, "channel not found")
    assert invisible.raw == missing.raw

    ends: list[bytes] = []
    for channel_id in (module_world.channel_id, "ch_doesnotexist"):
        async with open_stream(http, "WatchChannel", {"channelId": channel_id}, outsider) as stream:
            frame = await stream.next()
        assert frame.end
        assert frame.error() == {"code": "not_found", "message": "channel not found"}
        ends.append(frame.payload)
    assert ends[0] == ends[1]


async def test_an_agent_of_another_workspace_sees_no_ask(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    ask_id = await post_ask(http, module_world.agent.token, module_world.channel_id)
    ends: list[bytes] = []
    for target in (ask_id, random_ask_id()):
        async with open_stream(
            http, "WatchAsk", {"askId": target}, module_world.other_agent.token
        ) as stream:
            frame = await stream.next()
        assert frame.error() == {"code": "not_found", "message": "ask not found"}
        ends.append(frame.payload)
    assert ends[0] == ends[1]
    # Nor may it post into that channel or update that channel's messages.
    appended = await call(
        http,
        "AppendMessage",
        {"channelId": module_world.channel_id, "frame": {"blocks": [{"text": {"text": "hi"}}]}},
        module_world.other_agent.token,
    )
    expect(appended, "not_found", 404, "channel not found")


# -- step 4: participation -------------------------------------------------------------------


async def test_a_member_who_is_not_a_participant_sees_but_may_not_answer(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    ask_id = await post_ask(http, module_world.agent.token, module_world.channel_id)
    member = module_world.member.token
    # Visible: reads succeed.
    got = await call(http, "GetAsk", {"askId": ask_id}, member)
    assert got.ok, got
    listed = await call(http, "ListMessages", {"channelId": module_world.channel_id}, member)
    assert listed.ok, listed
    async with open_stream(
        http, "WatchChannel", {"channelId": module_world.channel_id}, member
    ) as stream:
        assert "message" in await stream.message()
    # Not a participant: PERMISSION_DENIED, also for answers that would fail validation.
    for body in (
        respond(ask_id, answer("db", "0"), answer("features")),
        respond(ask_id, *BAD_ANSWERS),
    ):
        reply = await call(http, "RespondToAsk", body, member)
        expect(
            reply, "permission_denied", 403, "only participants of the ask's channel may answer it"
        )
    assert await unanswered(http, module_world, ask_id)
    # Step 4 also comes before step 5.
    await _answer(http, module_world, ask_id)
    reply = await call(
        http, "RespondToAsk", respond(ask_id, answer("db", "0"), answer("features")), member
    )
    expect(reply, "permission_denied", 403)


# -- step 5: already answered; an identical retry is OK ---------------------------------------


async def _answer(http: httpx.AsyncClient, world: SeededWorld, ask_id: str) -> None:
    reply = await call(
        http,
        "RespondToAsk",
        respond(ask_id, answer("db", "1"), answer("features", "0", "3", custom_text="and SSO")),
        world.human.token,
    )
    assert reply.ok, reply


async def test_already_answered_is_a_failed_precondition_except_an_identical_retry(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    ask_id = await post_ask(http, module_world.agent.token, module_world.channel_id)
    await _answer(http, module_world, ask_id)
    before = await call(http, "GetAsk", {"askId": ask_id}, module_world.human.token)

    same = respond(ask_id, answer("db", "1"), answer("features", "0", "3", custom_text="and SSO"))
    # An identical retry by the same account: OK, in any entry order and pick order.
    reordered = respond(
        ask_id, answer("features", "3", "0", custom_text="and SSO"), answer("db", "1")
    )
    for body in (same, reordered):
        reply = await call(http, "RespondToAsk", body, module_world.human.token)
        assert reply.ok, reply
        assert reply.body == {}

    rejected = {
        "different answer, same account": (
            module_world.human,
            respond(ask_id, answer("db", "2"), answer("features")),
        ),
        "identical answer, other account": (module_world.human2, same),
        "different answer, other account": (
            module_world.human2,
            respond(ask_id, answer("db", "0"), answer("features")),
        ),
        "invalid answer (step 6 comes later)": (module_world.human, respond(ask_id, *BAD_ANSWERS)),
        "subset of the answer": (module_world.human, respond(ask_id, answer("db", "1"))),
    }
    for case, (account, body) in rejected.items():
        reply = await call(http, "RespondToAsk", body, account.token)
        assert (reply.code, reply.status, reply.message) == (
            "failed_precondition",
            400,
            "the ask is already answered",
        ), case
    after = await call(http, "GetAsk", {"askId": ask_id}, module_world.human.token)
    assert after.body == before.body  # nothing rejected changed the stored answer


# -- step 6: validation, one field violation per problem --------------------------------------

VALIDATION_ASK = ask_block(
    question("db", "0", "1", "2"),
    question("features", "0", "1", "2", "3", multi=True),
    question("notes"),  # free text only
)


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        pytest.param(
            [answer("db", "0"), answer("features")],
            [("answers", 'question "notes": no answer given')],
            id="missing-question",
        ),
        pytest.param(
            [answer("db", "0"), answer("features"), answer("notes"), answer("db", "1")],
            [("answers[3].question_id", 'question "db": answered more than once')],
            id="repeated-question",
        ),
        pytest.param(
            [answer("db", "0"), answer("features"), answer("notes"), answer("extra")],
            [("answers[3].question_id", 'question "extra": not a question of this ask')],
            id="unknown-question",
        ),
        pytest.param(
            [answer("db", "0"), answer("features"), answer("notes"), answer("")],
            [("answers[3].question_id", "question_id is empty")],
            id="empty-question-id",
        ),
        pytest.param(
            [answer("db", "7"), answer("features"), answer("notes")],
            [("answers[0].chosen_option_ids[0]", 'question "db": "7" is not an option')],
            id="option-not-offered",
        ),
        pytest.param(
            [answer("db"), answer("features", "1", "2", "1"), answer("notes")],
            [
                (
                    "answers[1].chosen_option_ids[2]",
                    'question "features": option "1" is chosen more than once',
                )
            ],
            id="repeated-option",
        ),
        pytest.param(
            [answer("db", "0", "1"), answer("features"), answer("notes")],
            [("answers[0].chosen_option_ids", 'question "db": only one option may be chosen')],
            id="two-picks-on-single-select",
        ),
        pytest.param(
            [answer("db", "0", custom_text="or else"), answer("features"), answer("notes")],
            [
                (
                    "answers[0].custom_text",
                    'question "db": on a single-select question free text replaces a pick',
                )
            ],
            id="pick-and-text-on-single-select",
        ),
        pytest.param(
            [answer("notes", "0"), answer("db", "0", "9")],
            [
                ("answers[0].chosen_option_ids[0]", 'question "notes": "0" is not an option'),
                ("answers[1].chosen_option_ids[1]", 'question "db": "9" is not an option'),
                ("answers[1].chosen_option_ids", 'question "db": only one option may be chosen'),
                ("answers", 'question "features": no answer given'),
            ],
            id="every-problem-at-once",
        ),
    ],
)
async def test_invalid_answers_get_one_field_violation_per_problem(
    http: httpx.AsyncClient,
    module_world: SeededWorld,
    answers: list[dict[str, object]],
    expected: list[tuple[str, str]],
) -> None:
    ask_id = await post_ask(http, module_world.agent.token, module_world.channel_id, VALIDATION_ASK)
    reply = await call(http, "RespondToAsk", respond(ask_id, *answers), module_world.human.token)
    expect(reply, "invalid_argument", 400, "the answers do not fit the ask")
    violations = reply.violations()
    assert len(violations) == len(expected), violations
    for violation, (field, description) in zip(violations, expected, strict=True):
        assert violation.field == field, violations
        assert description in violation.description, violations
    # The same violations, each with its question on the wire (the UI places them by it).
    invalid = reply.invalid_fields()
    assert [(f, d) for f, d, _ in invalid] == [(v.field, v.description) for v in violations]
    for _, text, question_id in invalid:
        named = re.match(r'^question ("(?:[^"\\]|\\.)*")', text)
        assert question_id == (json.loads(named[1]) if named else ""), invalid
    assert await unanswered(http, module_world, ask_id)  # a rejected answer changes nothing


@pytest.mark.parametrize(
    "answers",
    [
        pytest.param(
            [answer("db"), answer("features"), answer("notes")], id="every-question-skipped"
        ),
        pytest.param(
            [
                answer("notes", custom_text="ship it"),
                answer("features", "3", "0", custom_text="also SCIM"),
                answer("db", custom_text="Postgres 18"),
            ],
            id="text-alongside-picks-on-multi-select",
        ),
        pytest.param(
            [answer("db", "2"), answer("features", "0", "1", "2", "3"), answer("notes")],
            id="all-options",
        ),
    ],
)
async def test_valid_answers_are_stored_as_sent(
    http: httpx.AsyncClient, module_world: SeededWorld, answers: list[dict[str, object]]
) -> None:
    ask_id = await post_ask(http, module_world.agent.token, module_world.channel_id, VALIDATION_ASK)
    reply = await call(http, "RespondToAsk", respond(ask_id, *answers), module_world.human2.token)
    assert reply.ok, reply
    assert reply.raw == b"{}"
    got = await call(http, "GetAsk", {"askId": ask_id}, module_world.member.token)
    ask = got.body["ask"]
    assert isinstance(ask, dict)
    assert ask["answeredByAccountId"] == module_world.human2.account_id
    assert ask["answeredByName"] == "Grace"
    sent = {
        a["questionId"]: (a.get("chosenOptionIds", []), a.get("customText", "")) for a in answers
    }
    stored = {
        q["questionId"]: (q.get("chosenOptionIds", []), q.get("customText", ""))
        for q in ask["questions"]  # pyright: ignore[reportUnknownVariableType] - JSON
    }
    assert stored == sent


def test_violation_type_is_a_plain_value() -> None:
    # The helper decodes google.rpc.BadRequest; a sanity check that it compares by value.
    assert Violation("a", "b") == Violation("a", "b")
