"""Who is signed in, who asked, and what is waiting (issue 13): GetMe, Message.author_name /
author_kind, and ListPendingAsks (pending asks of the caller's channels, oldest first,
paged), over real HTTP against `compass serve` on a fresh database per test."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, cast

import httpx
import pytest
from hypothesis import given, settings, strategies as st

from compass_server.store.postgres import PostgresStore
from tests.e2e._asks import answer, post, post_ask, respond, text_block
from tests.e2e._connect import CAUGHT_UP, call, open_stream

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from tests._server import RunningServer, SeededWorld

Json = dict[str, object]


@pytest.fixture
async def client(compass_server: RunningServer) -> AsyncGenerator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=compass_server.url, timeout=30) as http:
        yield http


async def _channel(server: RunningServer, world: SeededWorld, name: str, *members: str) -> str:
    async with PostgresStore(server.dsn, pool_min=1, pool_max=1) as store:
        channel = await store.create_channel(world.workspace_id, name)
        for account_id in members:
            await store.add_participant(channel.channel_id, account_id)
    return channel.channel_id


def _list(body: Json, key: str) -> list[Json]:
    return cast("list[Json]", body.get(key, []))


async def _pending(client: httpx.AsyncClient, token: str, **request: object) -> Json:
    reply = await call(client, "ListPendingAsks", request, token)
    assert reply.ok, reply
    return reply.body


async def test_get_me_says_who_is_signed_in_and_their_workspaces(
    client: httpx.AsyncClient, seeded: SeededWorld
) -> None:
    me = await call(client, "GetMe", {}, seeded.human.token)
    assert me.ok, me
    assert me.body == {
        "accountId": seeded.human.account_id,
        "kind": "ACCOUNT_KIND_HUMAN",
        "name": seeded.human.name,
        "workspaces": [{"workspaceId": seeded.workspace_id, "name": "acme"}],
    }
    other = await call(client, "GetMe", {}, seeded.outsider.token)
    assert other.ok, other
    assert _list(other.body, "workspaces") == [
        {"workspaceId": seeded.other_workspace_id, "name": "globex"}
    ]
    # CommsService is for people: an agent's token is refused; no or a disabled token is not
    # accepted at all.
    assert (await call(client, "GetMe", {}, seeded.agent.token)).code == "permission_denied"
    assert (await call(client, "GetMe", {}, None)).code == "unauthenticated"
    assert (await call(client, "GetMe", {}, seeded.disabled.token)).code == "unauthenticated"


async def test_every_message_says_which_account_wrote_it(
    client: httpx.AsyncClient, compass_server: RunningServer, seeded: SeededWorld
) -> None:
    appended = await post(client, seeded.agent.token, seeded.channel_id, text_block("hello"))
    assert appended["authorName"] == seeded.agent.name
    assert appended["authorKind"] == "ACCOUNT_KIND_AGENT"
    ask_id = await post_ask(client, seeded.agent.token, seeded.channel_id)

    listed = await call(
        client, "ListMessages", {"channelId": seeded.channel_id}, seeded.human.token
    )
    assert listed.ok, listed
    authors = {(m["authorName"], m["authorKind"]) for m in _list(listed.body, "messages")}
    assert authors == {(seeded.agent.name, "ACCOUNT_KIND_AGENT")}

    updated = await call(
        client,
        "UpdateMessage",
        {"frame": {"messageId": appended["messageId"], "blocks": [text_block("hello again")]}},
        seeded.agent.token,
    )
    assert updated.ok, updated
    assert cast("Json", updated.body["message"])["authorName"] == seeded.agent.name

    async with open_stream(
        client, "WatchChannel", {"channelId": seeded.channel_id}, seeded.human.token
    ) as stream:
        replayed: list[Json] = []
        while (doc := (await stream.next()).json()) != CAUGHT_UP:
            replayed.append(cast("Json", doc["message"]))
        assert {m["authorName"] for m in replayed} == {seeded.agent.name}
        answered = await call(
            client,
            "RespondToAsk",
            respond(ask_id, answer("db", "0"), answer("features")),
            seeded.human.token,
        )
        assert answered.ok, answered
        live = cast("Json", (await stream.message())["message"])
        assert live["authorName"] == seeded.agent.name
        assert live["authorKind"] == "ACCOUNT_KIND_AGENT"


async def test_pending_asks_are_those_of_my_channels_oldest_first_and_leave_once_closed(
    client: httpx.AsyncClient, compass_server: RunningServer, seeded: SeededWorld
) -> None:
    agent, human = seeded.agent, seeded.human
    design = await _channel(compass_server, seeded, "design", agent.account_id, human.account_id)
    private = await _channel(compass_server, seeded, "private", agent.account_id)
    first = await post_ask(client, agent.token, seeded.channel_id)
    second = await post_ask(client, agent.token, design)
    await post_ask(client, agent.token, private)  # human does not participate there
    third = await post_ask(client, agent.token, seeded.channel_id)

    body = await _pending(client, human.token)
    asks = _list(body, "asks")
    assert [cast("Json", a["ask"])["askId"] for a in asks] == [first, second, third]
    assert body.get("nextPageToken", "") == ""
    entry = asks[1]
    assert entry["channelId"] == design
    assert entry["channelName"] == "design"
    assert entry["authorAccountId"] == agent.account_id
    assert entry["authorName"] == agent.name
    assert isinstance(entry["askedAt"], str)
    assert cast("Json", entry["ask"])["status"] == "ASK_STATUS_PENDING"
    assert [q["questionId"] for q in _list(cast("Json", entry["ask"]), "questions")] == [
        "db",
        "features",
    ]

    # Answered and declined asks leave the inbox; the workspace member who does not
    # participate, and the outsider, have nothing waiting.
    answered = await call(
        client, "RespondToAsk", respond(first, answer("db", "1"), answer("features")), human.token
    )
    assert answered.ok, answered
    declined = await call(client, "DeclineAsk", {"askId": second}, human.token)
    assert declined.ok, declined
    left = _list(await _pending(client, human.token), "asks")
    assert [cast("Json", a["ask"])["askId"] for a in left] == [third]
    assert _list(await _pending(client, seeded.member.token), "asks") == []
    assert _list(await _pending(client, seeded.outsider.token), "asks") == []


async def test_pending_asks_page_through_every_ask_exactly_once(
    client: httpx.AsyncClient, seeded: SeededWorld
) -> None:
    posted = [await post_ask(client, seeded.agent.token, seeded.channel_id) for _ in range(7)]
    seen: list[str] = []
    token = ""
    for _ in range(10):
        body = await _pending(client, seeded.human.token, pageSize=3, pageToken=token)
        page = _list(body, "asks")
        assert len(page) <= 3
        seen.extend(str(cast("Json", a["ask"])["askId"]) for a in page)
        token = str(body.get("nextPageToken", ""))
        if not token:
            break
    assert seen == posted


async def test_bad_inbox_requests_are_invalid_arguments(
    client: httpx.AsyncClient, seeded: SeededWorld
) -> None:
    reply = await call(client, "ListPendingAsks", {"pageSize": -1}, seeded.human.token)
    assert reply.code == "invalid_argument", reply
    assert [v.field for v in reply.violations()] == ["page_size"]
    # A ListMessages token is not an inbox token.
    other = base64.urlsafe_b64encode(b"p1:3:ch_x").decode().rstrip("=")
    for token in ("not base64 !", other, "aTE6bm90LWEtZGF0ZXxhc2s"):
        reply = await call(client, "ListPendingAsks", {"pageToken": token}, seeded.human.token)
        assert reply.code == "invalid_argument", (token, reply)
        assert [v.field for v in reply.violations()] == ["page_token"]


async def test_any_page_token_is_a_page_or_an_invalid_argument_never_a_failure(
    compass_server: RunningServer, seeded: SeededWorld
) -> None:
    headers = {"authorization": f"Bearer {seeded.human.token}"}
    tokens = st.one_of(
        st.text(max_size=80),
        st.binary(max_size=60).map(lambda raw: base64.urlsafe_b64encode(b"i1:" + raw).decode()),
        st.tuples(st.text(max_size=30), st.text(max_size=20)).map(
            lambda parts: base64.urlsafe_b64encode(f"i1:{parts[0]}|{parts[1]}".encode()).decode()
        ),
    )
    codes: list[str] = []

    with httpx.Client(base_url=compass_server.url, timeout=30) as sync:

        @settings(max_examples=60, deadline=None, database=None)
        @given(token=tokens)
        def one(token: str) -> None:
            response = sync.post(
                "/compass.v1.CommsService/ListPendingAsks",
                json={"pageToken": token},
                headers=headers,
            )
            code = "ok" if response.status_code == 200 else str(response.json().get("code"))
            assert code in ("ok", "invalid_argument"), (token, response.text)
            codes.append(code)

        one()
    assert "invalid_argument" in codes
