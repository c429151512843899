"""Delivery receipts and per-question free text over real HTTP (issue 22; docs/ask-outcomes.md
"Delivery receipts"): ReportDelivery's guard order and codes in Connect JSON and binary, the
receipt on every read and live on WatchChannel, and RespondToAsk refusing free text where the
agent cannot receive it, with InvalidFields naming the question."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import pytest

from gen.compass.v1 import agent_pb2, comms_pb2
from tests.e2e._asks import DEFAULT_ASK, answer, respond
from tests.e2e._connect import call, open_stream, path
from tests.e2e.test_outcomes import (
    expect,
    finish,
    get_ask,
    new_ask,
    second_agent,
)

if TYPE_CHECKING:
    import httpx

    from tests._server import RunningServer, SeededWorld
    from tests.e2e._asks import Json

pytestmark = pytest.mark.usefixtures("module_world")

DETAIL = 'the form was cancelled; the agent read "(cancelled)"'


def receipt(ask_id: str, state: str, detail: str = "", payload: str = "") -> Json:
    return {"askId": ask_id, "state": state, "detail": detail, "payload": payload}


async def test_report_delivery_guard_order(
    http: httpx.AsyncClient, module_world: SeededWorld, module_server: RunningServer
) -> None:
    world = module_world
    ask_id, _ = await new_ask(http, world)
    lost = receipt(ask_id, "DELIVERY_STATE_NOT_DELIVERED", DETAIL, '{"action":"cancel"}')
    # 1 UNAUTHENTICATED, whatever the body; a person may not call AgentService.
    expect(await call(http, "ReportDelivery", b"{broken", None), "unauthenticated", 401)
    expect(
        await call(http, "ReportDelivery", lost, world.human.token),
        "permission_denied",
        403,
        "human accounts may not call compass.v1.AgentService",
    )
    # 2 INVALID_ARGUMENT before any lookup (of a missing ask here), naming the fields.
    for body, fields in (
        (receipt("", "DELIVERY_STATE_DELIVERED"), ["ask_id"]),
        (receipt("ask_missing", "DELIVERY_STATE_UNSPECIFIED"), ["state"]),
        (receipt("ask_missing", "DELIVERY_STATE_NOT_DELIVERED"), ["detail"]),
        (receipt("ask_missing", "DELIVERY_STATE_DELIVERED_WITH_CHANGES", " "), ["detail"]),
        (receipt("ask_missing", "DELIVERY_STATE_DELIVERED", "d" * 1001), ["detail"]),
        (receipt("ask_missing", "DELIVERY_STATE_DELIVERED", "", "p" * 65537), ["payload"]),
        (
            receipt("ask_missing", "DELIVERY_STATE_DELIVERED", "a\u0000", "b\u0000"),
            ["detail", "payload"],
        ),
    ):
        reply = await call(http, "ReportDelivery", body, world.agent.token)
        expect(reply, "invalid_argument", 400, "malformed ReportDelivery request")
        assert [v.field for v in reply.violations()] == fields, reply
    # 3 NOT_FOUND: no such ask.
    expect(
        await call(
            http,
            "ReportDelivery",
            receipt("ask_missing", "DELIVERY_STATE_DELIVERED"),
            world.agent.token,
        ),
        "not_found",
        404,
        "ask not found",
    )
    # 4 PERMISSION_DENIED: another agent of the channel (it sees the ask) did not post it.
    other = await second_agent(module_server.dsn, world.channel_id)
    expect(
        await call(http, "ReportDelivery", lost, other),
        "permission_denied",
        403,
        "only the agent account that posted the ask may report its delivery",
    )
    # 5 FAILED_PRECONDITION: nothing delivered yet.
    expect(
        await call(http, "ReportDelivery", lost, world.agent.token),
        "failed_precondition",
        400,
        "the ask is still pending: nothing delivered yet",
    )
    assert "delivery" not in await get_ask(http, world, ask_id)
    # 6 OK once answered: the ask with its receipt, as every read returns it.
    await finish(http, world, ask_id, "ASK_STATUS_ANSWERED")
    reply = await call(http, "ReportDelivery", lost, world.agent.token)
    assert reply.ok, reply
    reported = reply.body["ask"]
    assert isinstance(reported, dict)
    delivery = reported["delivery"]
    assert isinstance(delivery, dict)
    assert delivery["state"] == "DELIVERY_STATE_NOT_DELIVERED"
    assert delivery["detail"] == DETAIL
    assert delivery["payload"] == '{"action":"cancel"}'
    assert delivery["reportedByAccountId"] == world.agent.account_id
    assert delivery["reportedByName"] == "Coding Agent"
    assert str(delivery["reportedAt"]).endswith("Z")
    assert reported["status"] == "ASK_STATUS_ANSWERED"
    assert reported == await get_ask(http, world, ask_id)
    # An identical repeat is OK (the same ask); another receipt is FAILED_PRECONDITION.
    again = await call(http, "ReportDelivery", lost, world.agent.token)
    assert again.ok, again
    assert again.body["ask"] == reported
    expect(
        await call(
            http, "ReportDelivery", receipt(ask_id, "DELIVERY_STATE_DELIVERED"), world.agent.token
        ),
        "failed_precondition",
        400,
        "the ask's delivery was already reported (not delivered); a receipt cannot be changed",
    )


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (
            "ASK_STATUS_WITHDRAWN",
            "the ask was withdrawn by the agent: there is no answer to deliver",
        ),
        ("ASK_STATUS_TIMED_OUT", "the ask timed out: there is no answer to deliver"),
    ],
)
async def test_a_closed_ask_has_no_answer_to_deliver(
    http: httpx.AsyncClient, module_world: SeededWorld, status: str, message: str
) -> None:
    ask_id, _ = await new_ask(http, module_world)
    await finish(http, module_world, ask_id, status)
    reply = await call(
        http,
        "ReportDelivery",
        receipt(ask_id, "DELIVERY_STATE_DELIVERED"),
        module_world.agent.token,
    )
    expect(reply, "failed_precondition", 400, message)


async def test_a_declined_ask_takes_a_receipt_in_the_binary_codec(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    ask_id, _ = await new_ask(http, module_world)
    await finish(http, module_world, ask_id, "ASK_STATUS_DECLINED")
    request = agent_pb2.ReportDeliveryRequest(
        ask_id=ask_id, state=comms_pb2.DELIVERY_STATE_DELIVERED, payload="{}"
    )
    response = await http.post(
        path("ReportDelivery"),
        content=request.SerializeToString(),
        headers={
            "content-type": "application/proto",
            "authorization": f"Bearer {module_world.agent.token}",
        },
    )
    assert response.status_code == 200, response.content
    reported = agent_pb2.ReportDeliveryResponse.FromString(response.content).ask
    assert reported.status == comms_pb2.ASK_STATUS_DECLINED
    assert reported.delivery.state == comms_pb2.DELIVERY_STATE_DELIVERED
    assert reported.delivery.payload == "{}"


async def test_a_watching_participant_sees_the_receipt_live(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    world = module_world
    ask_id, _ = await new_ask(http, world)
    await finish(http, world, ask_id, "ASK_STATUS_ANSWERED")
    answered = await get_ask(http, world, ask_id)
    listed = await call(http, "GetAsk", {"askId": ask_id}, world.human.token)
    revision = await _revision(http, world, str(listed.body["messageId"]))
    async with open_stream(
        http,
        "WatchChannel",
        {"channelId": world.channel_id, "afterRevision": str(revision)},
        world.human.token,
    ) as stream:
        caught_up = await stream.next()
        assert caught_up.json() == {"caughtUp": True}
        reply = await call(
            http,
            "ReportDelivery",
            receipt(ask_id, "DELIVERY_STATE_DELIVERED_WITH_CHANGES", "the note went as text"),
            world.agent.token,
        )
        assert reply.ok, reply
        message = await stream.message()
    changed = message["message"]
    assert isinstance(changed, dict)
    (block,) = [b for b in changed["blocks"] if b.get("ask", {}).get("askId") == ask_id]  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType] - JSON
    assert block["ask"] == reply.body["ask"]
    assert int(changed["revision"]) == revision + 1  # pyright: ignore[reportArgumentType] - JSON int64 as a string
    assert changed["updatedAt"] > answered.get("answeredAt", "")  # pyright: ignore[reportOperatorIssue] - RFC 3339 strings


async def _revision(http: httpx.AsyncClient, world: SeededWorld, message_id: str) -> int:
    listed = await call(
        http, "ListMessages", {"channelId": world.channel_id, "pageSize": 500}, world.human.token
    )
    assert listed.ok, listed
    messages = listed.body["messages"]
    assert isinstance(messages, list)
    (found,) = [m for m in messages if m["messageId"] == message_id]  # pyright: ignore[reportUnknownVariableType] - JSON
    return int(found["revision"])  # pyright: ignore[reportUnknownArgumentType] - JSON


async def test_free_text_is_refused_where_the_agent_cannot_receive_it(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    world = module_world
    block: Json = copy.deepcopy(DEFAULT_ASK)
    questions = block["ask"]["questions"]  # pyright: ignore[reportIndexIssue, reportUnknownVariableType] - JSON
    questions[0]["freeText"] = "FREE_TEXT_REFUSED"  # pyright: ignore[reportUnknownMemberType] - JSON
    questions[1]["freeText"] = "FREE_TEXT_INSTEAD_OF_PICKS"  # pyright: ignore[reportUnknownMemberType] - JSON
    ask_id, message = await new_ask(http, world, block)
    (posted,) = [b["ask"] for b in message["blocks"]]  # pyright: ignore[reportUnknownVariableType, reportGeneralTypeIssues] - JSON
    assert [q.get("freeText") for q in posted["questions"]] == [  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] - JSON
        "FREE_TEXT_REFUSED",
        "FREE_TEXT_INSTEAD_OF_PICKS",
    ]
    # A question without options cannot refuse free text: the append is refused.
    unanswerable: Json = {
        "ask": {"questions": [{"questionId": "why", "freeText": "FREE_TEXT_REFUSED"}]}
    }
    bad = await call(
        http,
        "AppendMessage",
        {"channelId": world.channel_id, "frame": {"blocks": [unanswerable]}},
        world.agent.token,
    )
    expect(bad, "invalid_argument", 400)
    assert [v.field for v in bad.violations()] == ["blocks[0].ask.questions[0].free_text"]

    refused = await call(
        http,
        "RespondToAsk",
        respond(
            ask_id,
            answer("db", custom_text="none of these"),
            answer("features", "1", custom_text="and SSO"),
        ),
        world.human.token,
    )
    expect(refused, "invalid_argument", 400)
    assert refused.invalid_fields() == [
        (
            "answers[0].custom_text",
            'question "db": the agent cannot receive free text for this question; '
            "choose an option, or send it empty to skip the question",
            "db",
        )
    ]
    assert (await get_ask(http, world, ask_id))["status"] == "ASK_STATUS_PENDING"
    ok = await call(
        http,
        "RespondToAsk",
        respond(ask_id, answer("db", "2"), answer("features", "1", custom_text="and SSO")),
        world.human.token,
    )
    assert ok.ok, ok
    stored = await get_ask(http, world, ask_id)
    assert stored["status"] == "ASK_STATUS_ANSWERED"
    assert stored["questions"][1]["customText"] == "and SSO"  # pyright: ignore[reportIndexIssue, reportUnknownMemberType] - JSON
