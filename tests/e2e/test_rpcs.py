"""Every RPC of docs/spec.md §1.3 over real HTTP: what each one promises beyond the round trip.

AppendMessage minting and idempotency, UpdateMessage's id rules (the stored answer wins),
ListChannels, ListMessages paging, WatchChannel replay-then-live and resume, WatchAsk's
current-state-then-changes, and the protobuf binary codec beside JSON.
"""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING

import pytest

from gen.compass.v1 import agent_pb2, comms_pb2
from tests.e2e._asks import (
    DEFAULT_ASK,
    answer,
    ask_block,
    ask_ids,
    post,
    post_ask,
    question,
    respond,
    text_block,
)
from tests.e2e._connect import CAUGHT_UP, call, open_stream

if TYPE_CHECKING:
    import httpx

    from tests._server import RunningServer, SeededWorld

pytestmark = pytest.mark.usefixtures("module_world")

Json = dict[str, object]


async def new_channel(world: SeededWorld, dsn: str, name: str) -> str:
    """A channel of the seeded workspace where agent, human and human2 participate."""
    from compass_server.store.postgres import PostgresStore

    async with PostgresStore(dsn, pool_min=1, pool_max=1) as store:
        channel = await store.create_channel(world.workspace_id, name)
        for account in (world.agent, world.human, world.human2):
            await store.add_participant(channel.channel_id, account.account_id)
    return channel.channel_id


# -- AgentService: AppendMessage ---------------------------------------------------------------


async def test_append_mints_one_ask_id_per_ask_block(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    message = await post(
        http,
        module_world.agent.token,
        module_world.channel_id,
        text_block("intro"),
        DEFAULT_ASK,
        text_block("between"),
        ask_block(question("second", "a")),
    )
    ids = ask_ids(message)
    assert len(ids) == 2
    assert len(set(ids)) == 2
    assert all(i.startswith("ask_") for i in ids)
    for ask_id in ids:
        got = await call(http, "GetAsk", {"askId": ask_id}, module_world.human.token)
        assert got.ok, got
        assert got.body["messageId"] == message["messageId"]


async def test_append_is_idempotent_on_client_message_id(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    token, channel = module_world.agent.token, module_world.channel_id
    first = await post(
        http, token, channel, text_block("t"), DEFAULT_ASK, client_message_id="idem-1"
    )
    again = await post(
        http, token, channel, text_block("t"), DEFAULT_ASK, client_message_id="idem-1"
    )
    assert again == first  # same message id, same minted ask ids, same revision
    changed = await call(
        http,
        "AppendMessage",
        {
            "channelId": channel,
            "frame": {"clientMessageId": "idem-1", "blocks": [text_block("other")]},
        },
        token,
    )
    assert (changed.code, changed.status) == ("already_exists", 409), changed
    # Without a key there is no deduplication.
    one = await post(http, token, channel, text_block("same"))
    two = await post(http, token, channel, text_block("same"))
    assert one["messageId"] != two["messageId"]


@pytest.mark.parametrize(
    ("frame", "field"),
    [
        (
            {"blocks": [{"ask": {"askId": "ask_mine", "questions": [question("q", "a")]}}]},
            "blocks[0].ask.ask_id",
        ),
        ({"blocks": [{"ask": {"questions": []}}]}, "blocks[0].ask.questions"),
        ({"blocks": [{}]}, "blocks[0]"),
        (
            {"blocks": [ask_block(question("q", "a"), question("q", "b"))]},
            "blocks[0].ask.questions[1].question_id",
        ),
        ({"blocks": [ask_block(question("", "a"))]}, "blocks[0].ask.questions[0].question_id"),
        (
            {"blocks": [ask_block(question("q", "a", "a"))]},
            "blocks[0].ask.questions[0].options[1].id",
        ),
        (
            {
                "blocks": [
                    ask_block(
                        {
                            **question("q", "a"),
                            "options": [{"id": "a", "label": "x"}],
                            "chosenOptionIds": ["a"],
                        }
                    )
                ]
            },
            "blocks[0].ask.questions[0].chosen_option_ids",
        ),
        (
            {"blocks": [{"ask": {"questions": [question("q")], "answeredByAccountId": "acct_me"}}]},
            "blocks[0].ask.answered_by_account_id",
        ),
        ({"messageId": "msg_x", "blocks": [text_block("t")]}, None),
    ],
    ids=[
        "agent-sent-ask-id",
        "no-questions",
        "no-block-kind",
        "duplicate-question-id",
        "empty-question-id",
        "duplicate-option-id",
        "answer-state",
        "answered-by",
        "message-id-on-append",
    ],
)
async def test_append_rejects_bad_blocks_with_field_violations(
    http: httpx.AsyncClient, module_world: SeededWorld, frame: Json, field: str | None
) -> None:
    reply = await call(
        http,
        "AppendMessage",
        {"channelId": module_world.channel_id, "frame": frame},
        module_world.agent.token,
    )
    assert (reply.code, reply.status) == ("invalid_argument", 400), reply
    if field is not None:
        assert field in [v.field for v in reply.violations()], reply.violations()


# -- AgentService: UpdateMessage ---------------------------------------------------------------


async def test_update_keeps_ask_ids_immutable_and_the_stored_answer_wins(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    token = module_world.agent.token
    message = await post(http, token, module_world.channel_id, text_block("v1"), DEFAULT_ASK)
    (ask_id,) = ask_ids(message)
    blocks = message["blocks"]
    assert isinstance(blocks, list)

    def frame(new_blocks: list[Json], message_id: object = message["messageId"]) -> Json:
        return {"frame": {"messageId": message_id, "blocks": new_blocks}}

    missing_id = copy.deepcopy(blocks)
    del missing_id[1]["ask"]["askId"]  # and not the stored ask either (that is a retry)
    missing_id[1]["ask"]["questions"][0]["header"] = "something else"
    changed_id = copy.deepcopy(blocks)
    changed_id[1]["ask"]["askId"] = "ask_someoneelse"
    rejections: dict[str, tuple[Json, str]] = {
        "empty message_id": (frame(blocks, ""), "frame.message_id"),
        "ask without its ask_id": (frame(missing_id), "blocks[1].ask.ask_id"),
        "ask id changed": (frame(changed_id), "blocks[1].ask.ask_id"),
        "ask dropped": (frame([text_block("v1")]), "blocks"),
        "ask added with an agent-made id": (
            frame([*blocks, {"ask": {**DEFAULT_ASK["ask"], "askId": "ask_forged"}}]),  # pyright: ignore[reportGeneralTypeIssues] - a dict
            "blocks[2].ask.ask_id",
        ),
    }
    for case, (body, field) in rejections.items():
        reply = await call(http, "UpdateMessage", body, token)
        assert (reply.code, reply.status) == ("invalid_argument", 400), (case, reply)
        assert field in [v.field for v in reply.violations()], (case, reply.violations())

    other = await call(http, "UpdateMessage", frame(blocks, "msg_unknown"), token)
    assert (other.code, other.message) == ("not_found", "message not found"), other

    answered = await call(
        http,
        "RespondToAsk",
        respond(ask_id, answer("db", "2"), answer("features", "1")),
        module_world.human.token,
    )
    assert answered.ok, answered

    # The agent rewrites the text and sends the ask with forged (and with erased) answer state.
    forged = copy.deepcopy(blocks)
    forged[0] = text_block("v2")
    forged[1]["ask"]["questions"][0]["chosenOptionIds"] = ["0"]
    forged[1]["ask"]["answeredByAccountId"] = module_world.agent.account_id
    updated = await call(http, "UpdateMessage", frame(forged), token)
    assert updated.ok, updated
    stored = updated.body["message"]
    assert isinstance(stored, dict)
    assert stored["blocks"][0] == text_block("v2")
    ask = stored["blocks"][1]["ask"]
    assert ask["askId"] == ask_id
    assert ask["answeredByAccountId"] == module_world.human.account_id
    assert [q.get("chosenOptionIds") for q in ask["questions"]] == [["2"], ["1"]]
    assert int(stored["revision"]) > int(str(message["revision"]))

    erased = copy.deepcopy(blocks)  # the blocks as first appended: no answer state at all
    erased[0] = text_block("v3")
    again = await call(http, "UpdateMessage", frame(erased), token)
    assert again.ok, again
    got = await call(http, "GetAsk", {"askId": ask_id}, module_world.human.token)
    assert got.body["ask"] == ask  # the answer survived both updates


async def test_a_retried_update_that_added_an_ask_returns_the_stored_message(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    # An update's response is lost and the agent sends the same frame again: the ask it
    # added is minted now, and the retry (the ask still unminted) is that ask.
    token = module_world.agent.token
    message = await post(
        http, token, module_world.channel_id, text_block("v1"), client_message_id="retry-1"
    )
    body = {"frame": {"messageId": message["messageId"], "blocks": [text_block("v1"), DEFAULT_ASK]}}
    first = await call(http, "UpdateMessage", body, token)
    assert first.ok, first
    retried = await call(http, "UpdateMessage", body, token)
    assert retried.ok, retried
    assert retried.body == first.body  # the same ask id, the same revision
    (ask_id,) = ask_ids(first.body["message"])  # pyright: ignore[reportArgumentType] - JSON
    assert ask_id

    other = copy.deepcopy(body)
    other["frame"]["blocks"][1]["ask"]["questions"][0]["header"] = "another ask"  # pyright: ignore[reportIndexIssue] - JSON
    refused = await call(http, "UpdateMessage", other, token)
    assert (refused.code, refused.status) == ("invalid_argument", 400), refused
    assert [v.field for v in refused.violations()] == ["blocks[1].ask.ask_id"]


async def test_only_the_author_may_update(
    http: httpx.AsyncClient, module_world: SeededWorld, module_server: RunningServer
) -> None:
    from compass_server.store import AccountKind
    from compass_server.store.postgres import PostgresStore

    message = await post(
        http, module_world.agent.token, module_world.channel_id, text_block("mine")
    )
    async with PostgresStore(module_server.dsn, pool_min=1, pool_max=1) as store:
        second, token = await store.create_account(AccountKind.AGENT, "Second Agent")
        await store.add_participant(module_world.channel_id, second.account_id)
    reply = await call(
        http,
        "UpdateMessage",
        {"frame": {"messageId": message["messageId"], "blocks": [text_block("theirs")]}},
        token,
    )
    assert (reply.code, reply.status) == ("permission_denied", 403), reply


# -- CommsService: ListChannels, ListMessages ----------------------------------------------------


async def test_list_channels_shows_the_channels_one_participates_in(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    mine = await call(http, "ListChannels", {}, module_world.human.token)
    assert mine.ok, mine
    channels = mine.body["channels"]
    assert isinstance(channels, list)
    assert {
        "channelId": module_world.channel_id,
        "workspaceId": module_world.workspace_id,
        "name": "general",
    } in channels
    theirs = await call(http, "ListChannels", {}, module_world.outsider.token)
    assert theirs.body == {
        "channels": [
            {
                "channelId": module_world.other_channel_id,
                "workspaceId": module_world.other_workspace_id,
                "name": "general",
            }
        ]
    }
    watcher = await call(http, "ListChannels", {}, module_world.member.token)
    assert watcher.body == {}  # a member who participates nowhere


async def test_list_messages_pages_oldest_first(
    http: httpx.AsyncClient, module_world: SeededWorld, module_server: RunningServer
) -> None:
    channel = await new_channel(module_world, module_server.dsn, "paging")
    posted = [
        (await post(http, module_world.agent.token, channel, text_block(f"m{i}")))["messageId"]
        for i in range(7)
    ]
    seen: list[object] = []
    token = ""
    pages = 0
    while True:
        body: Json = {"channelId": channel, "pageSize": 3}
        if token:
            body["pageToken"] = token
        reply = await call(http, "ListMessages", body, module_world.human.token)
        assert reply.ok, reply
        messages = reply.body.get("messages", [])
        assert isinstance(messages, list)
        assert len(messages) <= 3
        seen.extend(m["messageId"] for m in messages)
        pages += 1
        token = str(reply.body.get("nextPageToken", ""))
        if not token:
            break
    assert seen == posted
    assert pages == 3

    default = await call(http, "ListMessages", {"channelId": channel}, module_world.human.token)
    assert [m["messageId"] for m in default.body["messages"]] == posted  # pyright: ignore[reportGeneralTypeIssues, reportUnknownVariableType] - JSON

    for bad in (
        {"channelId": channel, "pageToken": "garbage!"},
        {"channelId": module_world.channel_id, "pageToken": first_token(channel)},
        {"channelId": channel, "pageSize": -1},
        {"channelId": ""},
    ):
        reply = await call(http, "ListMessages", bad, module_world.human.token)
        assert (reply.code, reply.status) == ("invalid_argument", 400), (bad, reply)


def first_token(channel: str) -> str:
    """A well-formed page token of `channel` (it must not work for another channel)."""
    import base64

    return base64.urlsafe_b64encode(f"p1:1:{channel}".encode()).decode().rstrip("=")


# -- CommsService: WatchChannel ------------------------------------------------------------------


async def test_watch_channel_replays_after_a_revision_then_goes_live(
    http: httpx.AsyncClient, module_world: SeededWorld, module_server: RunningServer
) -> None:
    channel = await new_channel(module_world, module_server.dsn, "watching")
    agent = module_world.agent.token
    first = await post(http, agent, channel, text_block("one"))
    second = await post(http, agent, channel, DEFAULT_ASK)
    third = await post(http, agent, channel, text_block("three"))
    revisions = [int(str(m["revision"])) for m in (first, second, third)]
    assert revisions == sorted(revisions)

    async with open_stream(
        http,
        "WatchChannel",
        {"channelId": channel, "afterRevision": str(revisions[0])},
        module_world.human.token,
    ) as watch:
        replayed = [(await watch.message())["message"] for _ in range(2)]
        assert [m["messageId"] for m in replayed] == [second["messageId"], third["messageId"]]  # pyright: ignore[reportIndexIssue, reportUnknownVariableType] - JSON
        caught_up = await watch.next()
        assert caught_up.json() == CAUGHT_UP  # the replay is done, the watch is live
        with pytest.raises(TimeoutError):
            await watch.next(within=0.3)  # nothing more until something changes

        fourth = await post(http, agent, channel, text_block("four"))
        live = (await watch.message())["message"]
        assert live == fourth

        (ask_id,) = ask_ids(second)
        answered = await call(
            http,
            "RespondToAsk",
            respond(ask_id, answer("db", "0"), answer("features")),
            module_world.human2.token,
        )
        assert answered.ok, answered
        changed = (await watch.message())["message"]
        assert isinstance(changed, dict)
        assert changed["messageId"] == second["messageId"]
        assert int(changed["revision"]) > int(str(fourth["revision"]))
        assert changed["blocks"][0]["ask"]["answeredByAccountId"] == module_world.human2.account_id
        last_seen = int(changed["revision"])

    # Resume: a new watch after the last revision seen gets only what changed since.
    fifth = await post(http, agent, channel, text_block("five"))
    async with open_stream(
        http,
        "WatchChannel",
        {"channelId": channel, "afterRevision": str(last_seen)},
        module_world.human.token,
    ) as resumed:
        assert (await resumed.message())["message"] == fifth
        assert (await resumed.next()).json() == CAUGHT_UP
        with pytest.raises(TimeoutError):
            await resumed.next(within=0.3)

    # From zero: every message once, as of its latest revision, in revision order.
    async with open_stream(
        http, "WatchChannel", {"channelId": channel}, module_world.human.token
    ) as full:
        everything = [(await full.message())["message"] for _ in range(5)]
    ids = [m["messageId"] for m in everything]  # pyright: ignore[reportIndexIssue, reportUnknownVariableType] - JSON
    assert ids == [
        first["messageId"],
        third["messageId"],
        fourth["messageId"],
        second["messageId"],
        fifth["messageId"],
    ]


async def test_watch_channel_rejects_bad_requests_in_the_stream(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    for body, code in (
        ({"channelId": ""}, "invalid_argument"),
        ({"channelId": module_world.channel_id, "afterRevision": "-1"}, "invalid_argument"),
        ({"channelId": "ch_nope"}, "not_found"),
    ):
        async with open_stream(http, "WatchChannel", body, module_world.human.token) as stream:
            frame = await stream.next()
            response = await stream.response()
        assert response.status_code == 200  # stream errors travel in the end frame
        assert frame.end
        error = frame.error()
        assert error is not None
        assert error["code"] == code, (body, error)


# -- AgentService: WatchAsk ------------------------------------------------------------------------


async def test_watch_ask_sends_current_state_then_changes_and_ends_when_answered(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    agent = module_world.agent.token
    message = await post(http, agent, module_world.channel_id, text_block("v1"), DEFAULT_ASK)
    (ask_id,) = ask_ids(message)
    async with open_stream(http, "WatchAsk", {"askId": ask_id}, agent) as watch:
        current = (await watch.message())["ask"]
        assert isinstance(current, dict)
        assert current["askId"] == ask_id
        assert "answeredByAccountId" not in current

        # An update that does not touch the ask sends nothing; one that changes it does.
        blocks = copy.deepcopy(message["blocks"])
        assert isinstance(blocks, list)
        blocks[0] = text_block("v2")
        assert (
            await call(
                http,
                "UpdateMessage",
                {"frame": {"messageId": message["messageId"], "blocks": blocks}},
                agent,
            )
        ).ok
        with pytest.raises(TimeoutError):
            await watch.next(within=0.5)
        blocks[1]["ask"]["questions"][0]["question"] = "Which database, really?"
        assert (
            await call(
                http,
                "UpdateMessage",
                {"frame": {"messageId": message["messageId"], "blocks": blocks}},
                agent,
            )
        ).ok
        reworded = (await watch.message())["ask"]
        assert reworded["questions"][0]["question"] == "Which database, really?"  # pyright: ignore[reportIndexIssue, reportCallIssue, reportArgumentType] - JSON

        assert (
            await call(
                http,
                "RespondToAsk",
                respond(ask_id, answer("db", "0"), answer("features", "2")),
                module_world.human.token,
            )
        ).ok
        final = (await watch.message())["ask"]
        assert isinstance(final, dict)
        assert final["answeredByAccountId"] == module_world.human.account_id
        assert (await watch.end()).error() is None

    # Watching an answered ask: its state at once, then the end.
    async with open_stream(http, "WatchAsk", {"askId": ask_id}, agent) as again:
        assert (await again.message())["ask"] == final
        assert (await again.end()).error() is None


# -- the protobuf binary codec ---------------------------------------------------------------------


async def test_the_binary_codec_serves_the_same_rpcs(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    def headers(token: str) -> dict[str, str]:
        return {"content-type": "application/proto", "authorization": f"Bearer {token}"}

    request = agent_pb2.AppendMessageRequest(
        channel_id=module_world.channel_id,
        frame=comms_pb2.MessageUpdated(
            client_message_id="binary-1",
            blocks=[
                comms_pb2.MessageBlock(
                    ask=comms_pb2.Ask(
                        questions=[
                            comms_pb2.AskQuestion(
                                question_id="db",
                                question="Which?",
                                options=[comms_pb2.AskOption(id="0", label="Postgres")],
                                recommended=0,
                            )
                        ]
                    )
                )
            ],
        ),
    )
    response = await http.post(
        "/compass.v1.AgentService/AppendMessage",
        content=request.SerializeToString(),
        headers=headers(module_world.agent.token),
    )
    assert response.status_code == 200, response.content
    assert response.headers["content-type"] == "application/proto"
    message = agent_pb2.AppendMessageResponse.FromString(response.content).message
    ask_id = message.blocks[0].ask.ask_id
    assert ask_id.startswith("ask_")
    assert message.blocks[0].ask.questions[0].HasField("recommended")

    answer_request = comms_pb2.RespondToAskRequest(
        ask_id=ask_id,
        answers=[comms_pb2.AskQuestionAnswer(question_id="db", chosen_option_ids=["0"])],
    )
    answered = await http.post(
        "/compass.v1.CommsService/RespondToAsk",
        content=answer_request.SerializeToString(),
        headers=headers(module_world.human.token),
    )
    assert answered.status_code == 200, answered.content
    assert answered.content == b""  # RespondToAskResponse{} is zero bytes in binary
    comms_pb2.RespondToAskResponse.FromString(answered.content)

    got = await http.post(
        "/compass.v1.CommsService/GetAsk",
        content=comms_pb2.GetAskRequest(ask_id=ask_id).SerializeToString(),
        headers=headers(module_world.human.token),
    )
    ask = comms_pb2.GetAskResponse.FromString(got.content).ask
    assert list(ask.questions[0].chosen_option_ids) == ["0"]
    assert ask.answered_by_account_id == module_world.human.account_id

    # Errors are JSON in every codec (the Connect protocol), and garbage is INVALID_ARGUMENT.
    garbage = await http.post(
        "/compass.v1.CommsService/GetAsk",
        content=b"\xff\xff\xff",
        headers=headers(module_world.human.token),
    )
    assert garbage.status_code == 400
    assert garbage.json() == {
        "code": "invalid_argument",
        "message": "request body is not a valid compass.v1.GetAskRequest in protobuf binary",
    }


async def test_concurrent_watchers_all_see_a_change(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    ask_id = await post_ask(http, module_world.agent.token, module_world.channel_id)
    async with (
        open_stream(http, "WatchAsk", {"askId": ask_id}, module_world.agent.token) as a,
        open_stream(http, "WatchAsk", {"askId": ask_id}, module_world.agent.token) as b,
    ):
        await asyncio.gather(a.message(), b.message())
        assert (
            await call(
                http,
                "RespondToAsk",
                respond(ask_id, answer("db", "1"), answer("features")),
                module_world.human.token,
            )
        ).ok
        finals = await asyncio.gather(a.message(), b.message())
    assert finals[0] == finals[1]
    assert finals[0]["ask"]["answeredByAccountId"] == module_world.human.account_id  # pyright: ignore[reportIndexIssue, reportCallIssue, reportArgumentType] - JSON
