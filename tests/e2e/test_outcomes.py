"""Every ask ends with a typed outcome, over real HTTP (design record, resolved decision 11;
docs/ask-outcomes.md): the guard order of CloseAsk and DeclineAsk, every final status refusing
every later write by name, WatchAsk ending on each final status, WatchChannel carrying it, 64
racers with one winner, and the deadline sweeper with two server processes on one database.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from compass_server.store import AccountKind
from compass_server.store.postgres import PostgresStore
from tests import _server
from tests._wait import eventually
from tests.e2e._asks import DEFAULT_ASK, answer, ask_ids, post, respond
from tests.e2e._connect import Reply, call, open_stream

if TYPE_CHECKING:
    from tests._server import RunningServer, SeededWorld
    from tests.e2e._asks import Json

pytestmark = pytest.mark.usefixtures("module_world")

_ids = itertools.count(1)
HUMAN_ANSWERS = (answer("db", "1"), answer("features", "0"))
TIMEOUT_ANSWERS = (answer("db", "0"), answer("features"))
OUTCOMES = {
    "ASK_STATUS_ANSWERED": "the ask is already answered",
    "ASK_STATUS_DECLINED": "the ask was declined by Ada",
    "ASK_STATUS_WITHDRAWN": "the ask was withdrawn by the agent",
    "ASK_STATUS_TIMED_OUT": "the ask timed out",
    "ASK_STATUS_EXPIRED": "the ask expired",
}


def expect(reply: Reply, code: str, status: int, message: str | None = None) -> None:
    assert (reply.code, reply.status) == (code, status), reply
    if message is not None:
        assert reply.message == message, reply


def timed_ask(deadline: datetime | None = None, policy: str = "") -> Json:
    block: Json = copy.deepcopy(DEFAULT_ASK)
    inner = block["ask"]
    assert isinstance(inner, dict)
    if deadline is not None:
        inner["deadline"] = deadline.isoformat().replace("+00:00", "Z")
    if policy:
        inner["onTimeout"] = policy
    return block


async def new_ask(
    http: httpx.AsyncClient, world: SeededWorld, block: Json | None = None
) -> tuple[str, Json]:
    message = await post(
        http,
        world.agent.token,
        world.channel_id,
        block or timed_ask(),
        client_message_id=f"o-{next(_ids)}",
    )
    (ask_id,) = ask_ids(message)
    return ask_id, message


async def get_ask(http: httpx.AsyncClient, world: SeededWorld, ask_id: str) -> dict[str, object]:
    reply = await call(http, "GetAsk", {"askId": ask_id}, world.human.token)
    assert reply.ok, reply
    ask = reply.body["ask"]
    assert isinstance(ask, dict)
    return ask  # pyright: ignore[reportUnknownVariableType] - JSON


def close(ask_id: str, status: str, reason: str = "", *answers: Json) -> Json:
    return {"askId": ask_id, "status": status, "reason": reason, "answers": list(answers)}


def decline(ask_id: str, reason: str = "") -> Json:
    return {"askId": ask_id, "reason": reason}


async def finish(http: httpx.AsyncClient, world: SeededWorld, ask_id: str, status: str) -> None:
    """Bring a pending ask to `status` the way its writer does."""
    if status == "ASK_STATUS_ANSWERED":
        reply = await call(http, "RespondToAsk", respond(ask_id, *HUMAN_ANSWERS), world.human.token)
    elif status == "ASK_STATUS_DECLINED":
        reply = await call(http, "DeclineAsk", decline(ask_id, "not mine"), world.human.token)
    elif status == "ASK_STATUS_WITHDRAWN":
        reply = await call(http, "CloseAsk", close(ask_id, status, "aborted"), world.agent.token)
    elif status == "ASK_STATUS_TIMED_OUT":
        reply = await call(
            http, "CloseAsk", close(ask_id, status, "", *TIMEOUT_ANSWERS), world.agent.token
        )
    else:
        raise AssertionError(status)
    assert reply.ok, reply


async def second_agent(dsn: str, channel_id: str) -> str:
    async with PostgresStore(dsn, pool_min=1, pool_max=1) as store:
        row, token = await store.create_account(AccountKind.AGENT, "Other Agent")
        await store.add_participant(channel_id, row.account_id)
    return token


async def wait_for_status(
    http: httpx.AsyncClient, world: SeededWorld, ask_id: str, status: str, within: float = 10.0
) -> dict[str, object]:
    deadline = time.monotonic() + within
    while True:
        ask = await get_ask(http, world, ask_id)
        if ask.get("status") == status or time.monotonic() > deadline:
            assert ask.get("status") == status, ask
            return ask
        await asyncio.sleep(0.1)


# -- guard order ---------------------------------------------------------------------------------


async def test_close_ask_guard_order(
    http: httpx.AsyncClient, module_world: SeededWorld, module_server: RunningServer
) -> None:
    world = module_world
    ask_id, _ = await new_ask(http, world)
    # 1 UNAUTHENTICATED, whatever the body.
    expect(await call(http, "CloseAsk", b"{broken", None), "unauthenticated", 401)
    expect(
        await call(http, "CloseAsk", close("", "ASK_STATUS_PENDING"), "cmp_x"),
        "unauthenticated",
        401,
    )
    # Humans may not call AgentService at all.
    expect(
        await call(http, "CloseAsk", close(ask_id, "ASK_STATUS_WITHDRAWN"), world.human.token),
        "permission_denied",
        403,
        "human accounts may not call compass.v1.AgentService",
    )
    # 2 INVALID_ARGUMENT before any lookup (here: of a missing ask).
    for body, field in (
        (close("", "ASK_STATUS_WITHDRAWN"), "ask_id"),
        (close("ask_missing", "ASK_STATUS_UNSPECIFIED"), "status"),
        (close("ask_missing", "ASK_STATUS_PENDING"), "status"),
        (close("ask_missing", "ASK_STATUS_ANSWERED"), "status"),
        (close("ask_missing", "ASK_STATUS_DECLINED"), "status"),
        (close("ask_missing", "ASK_STATUS_EXPIRED"), "status"),
        (close("ask_missing", "ASK_STATUS_WITHDRAWN", "", answer("db", "0")), "answers"),
        (close("ask_missing", "ASK_STATUS_WITHDRAWN", "r" * 501), "reason"),
        (close("ask_missing", "ASK_STATUS_WITHDRAWN", "a\u0000b"), "reason"),
    ):
        reply = await call(http, "CloseAsk", body, world.agent.token)
        expect(reply, "invalid_argument", 400)
        assert field in [v.field for v in reply.violations()], reply
    # 3 NOT_FOUND: missing, or not the appending agent account, with the same message.
    other = await second_agent(module_server.dsn, world.channel_id)
    missing = await call(
        http, "CloseAsk", close("ask_missing", "ASK_STATUS_WITHDRAWN"), world.agent.token
    )
    expect(missing, "not_found", 404, "ask not found")
    for token in (other,):
        for body in (
            close(ask_id, "ASK_STATUS_WITHDRAWN"),
            close(ask_id, "ASK_STATUS_TIMED_OUT", "", answer("nope", "9")),
        ):
            reply = await call(http, "CloseAsk", body, token)
            expect(reply, "not_found", 404, "ask not found")
            assert reply.raw == missing.raw
    # 5 INVALID_ARGUMENT with field violations for TIMED_OUT answers that do not fit.
    reply = await call(
        http,
        "CloseAsk",
        close(ask_id, "ASK_STATUS_TIMED_OUT", "", answer("db", "9"), answer("nope")),
        world.agent.token,
    )
    expect(reply, "invalid_argument", 400)
    assert {v.field for v in reply.violations()} >= {
        "answers[0].chosen_option_ids[0]",
        "answers[1].question_id",
        "answers",
    }
    assert (await get_ask(http, world, ask_id))["status"] == "ASK_STATUS_PENDING"
    # 6 OK: the ask as closed.
    reply = await call(
        http,
        "CloseAsk",
        close(ask_id, "ASK_STATUS_TIMED_OUT", "runtime", *TIMEOUT_ANSWERS),
        world.agent.token,
    )
    assert reply.ok, reply
    closed = reply.body["ask"]
    assert isinstance(closed, dict)
    assert closed["status"] == "ASK_STATUS_TIMED_OUT"
    assert closed["closedByAccountId"] == world.agent.account_id
    assert closed["answeredByAccountId"] == world.agent.account_id
    assert closed["closeReason"] == "runtime"
    assert all(q.get("timedOut") for q in closed["questions"])  # pyright: ignore[reportUnknownVariableType] - JSON
    assert closed == await get_ask(http, world, ask_id)
    # 4 FAILED_PRECONDITION (final) outranks the answers' problems; an identical repeat is OK.
    reply = await call(
        http,
        "CloseAsk",
        close(ask_id, "ASK_STATUS_TIMED_OUT", "runtime", answer("nope")),
        world.agent.token,
    )
    expect(reply, "failed_precondition", 400, "the ask timed out")
    again = await call(
        http,
        "CloseAsk",
        close(ask_id, "ASK_STATUS_TIMED_OUT", "runtime", *TIMEOUT_ANSWERS),
        world.agent.token,
    )
    assert again.ok, again
    assert again.body["ask"] == closed


async def test_decline_ask_guard_order(http: httpx.AsyncClient, module_world: SeededWorld) -> None:
    world = module_world
    ask_id, _ = await new_ask(http, world)
    expect(await call(http, "DeclineAsk", b"{broken", None), "unauthenticated", 401)
    expect(
        await call(http, "DeclineAsk", decline(ask_id), world.agent.token),
        "permission_denied",
        403,
        "agent accounts may not call compass.v1.CommsService",
    )
    for body, field in (
        (decline(""), "ask_id"),
        (decline("a" * 201), "ask_id"),
        (decline("ask_missing", "r" * 501), "reason"),
        (decline("ask_missing", "nul\u0000"), "reason"),
    ):
        for token in (world.human.token, world.outsider.token, world.member.token):
            reply = await call(http, "DeclineAsk", body, token)
            expect(reply, "invalid_argument", 400)
            assert field in [v.field for v in reply.violations()], reply
    missing = await call(http, "DeclineAsk", decline("ask_missing"), world.human.token)
    expect(missing, "not_found", 404, "ask not found")
    invisible = await call(http, "DeclineAsk", decline(ask_id), world.outsider.token)
    assert invisible.raw == missing.raw
    denied = "only participants of the ask's channel may decline it"
    expect(
        await call(http, "DeclineAsk", decline(ask_id), world.member.token),
        "permission_denied",
        403,
        denied,
    )
    assert (await get_ask(http, world, ask_id))["status"] == "ASK_STATUS_PENDING"
    reply = await call(http, "DeclineAsk", decline(ask_id, "not mine"), world.human.token)
    assert reply.ok, reply
    assert reply.body == {}
    declined = await get_ask(http, world, ask_id)
    assert declined["status"] == "ASK_STATUS_DECLINED"
    assert declined["closedByAccountId"] == world.human.account_id
    assert declined["closedByName"] == "Ada"
    assert declined["closeReason"] == "not mine"
    assert isinstance(declined["closedAt"], str)
    # PERMISSION_DENIED still comes before FAILED_PRECONDITION; identical repeats are OK.
    expect(
        await call(http, "DeclineAsk", decline(ask_id), world.member.token),
        "permission_denied",
        403,
    )
    assert (await call(http, "DeclineAsk", decline(ask_id, "not mine"), world.human.token)).ok
    expect(
        await call(http, "DeclineAsk", decline(ask_id, "not mine"), world.human2.token),
        "failed_precondition",
        400,
        "the ask was declined by Ada",
    )


# -- every final status refuses every later write, by name ---------------------------------------


@pytest.mark.parametrize("status", list(OUTCOMES))
async def test_a_final_ask_refuses_respond_decline_and_close(
    http: httpx.AsyncClient, module_world: SeededWorld, status: str
) -> None:
    world = module_world
    if status == "ASK_STATUS_EXPIRED":
        past = datetime.now(UTC) - timedelta(seconds=1)
        ask_id, _ = await new_ask(http, world, timed_ask(past, "ASK_TIMEOUT_POLICY_FAIL"))
        await wait_for_status(http, world, ask_id, status)  # the module server's sweeper
    else:
        ask_id, _ = await new_ask(http, world)
        await finish(http, world, ask_id, status)
    before = await get_ask(http, world, ask_id)
    assert before["status"] == status
    message = OUTCOMES[status]
    for method, body, token in (
        ("RespondToAsk", respond(ask_id, *TIMEOUT_ANSWERS), world.human2.token),
        ("DeclineAsk", decline(ask_id, "late"), world.human2.token),
        ("CloseAsk", close(ask_id, "ASK_STATUS_WITHDRAWN", "late"), world.agent.token),
        (
            "CloseAsk",
            close(ask_id, "ASK_STATUS_TIMED_OUT", "late", *TIMEOUT_ANSWERS),
            world.agent.token,
        ),
    ):
        expect(await call(http, method, body, token), "failed_precondition", 400, message)
    assert await get_ask(http, world, ask_id) == before


# -- watches ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", list(OUTCOMES))
async def test_watch_ask_ends_after_each_final_status_and_watch_channel_carries_it(
    http: httpx.AsyncClient, module_world: SeededWorld, status: str
) -> None:
    world = module_world
    block = None
    if status == "ASK_STATUS_EXPIRED":
        block = timed_ask(datetime.now(UTC) + timedelta(seconds=1), "ASK_TIMEOUT_POLICY_FAIL")
    ask_id, message = await new_ask(http, world, block)
    async with (
        open_stream(http, "WatchAsk", {"askId": ask_id}, world.agent.token) as watch,
        open_stream(
            http,
            "WatchChannel",
            {"channelId": world.channel_id, "afterRevision": message["revision"]},
            world.human.token,
        ) as channel,
    ):
        pending = (await watch.message())["ask"]
        assert isinstance(pending, dict)
        assert pending["status"] == "ASK_STATUS_PENDING"
        if status != "ASK_STATUS_EXPIRED":
            await finish(http, world, ask_id, status)
        final = (await watch.message(within=10))["ask"]
        assert isinstance(final, dict)
        assert final["status"] == status
        assert (await watch.end()).error() is None
        changed = (await channel.message(within=10))["message"]
        assert isinstance(changed, dict)
        assert changed["messageId"] == message["messageId"]
        assert changed["blocks"][0]["ask"] == final  # pyright: ignore[reportIndexIssue, reportCallIssue, reportArgumentType] - JSON
    # A watch on an ask that is already final sends it and ends at once.
    async with open_stream(http, "WatchAsk", {"askId": ask_id}, world.agent.token) as watch:
        assert (await watch.message())["ask"] == final
        assert (await watch.end()).error() is None


# -- racers ----------------------------------------------------------------------------------------


async def test_64_racers_mixing_respond_decline_and_close_have_exactly_one_winner(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    world = module_world
    ask_id, _ = await new_ask(http, world)
    calls: list[tuple[str, str, Json, str]] = [
        ("answered", "RespondToAsk", respond(ask_id, *HUMAN_ANSWERS), world.human.token),
        ("answered2", "RespondToAsk", respond(ask_id, *TIMEOUT_ANSWERS), world.human2.token),
        ("declined", "DeclineAsk", decline(ask_id, "no"), world.human.token),
        ("declined2", "DeclineAsk", decline(ask_id, "no"), world.human2.token),
        ("withdrawn", "CloseAsk", close(ask_id, "ASK_STATUS_WITHDRAWN", "gone"), world.agent.token),
        (
            "timed_out",
            "CloseAsk",
            close(ask_id, "ASK_STATUS_TIMED_OUT", "", *TIMEOUT_ANSWERS),
            world.agent.token,
        ),
    ]
    racers = [calls[i % len(calls)] for i in range(64)]
    replies = await asyncio.gather(*(call(http, m, b, t) for _, m, b, t in racers))
    winners = {kind for (kind, *_), reply in zip(racers, replies, strict=True) if reply.ok}
    assert len(winners) == 1, winners
    for reply in replies:
        assert reply.ok or (reply.code, reply.status) == ("failed_precondition", 400), reply
    final = await get_ask(http, world, ask_id)
    (winner,) = winners
    expected = {
        "answered": ("ASK_STATUS_ANSWERED", world.human.account_id),
        "answered2": ("ASK_STATUS_ANSWERED", world.human2.account_id),
        "declined": ("ASK_STATUS_DECLINED", world.human.account_id),
        "declined2": ("ASK_STATUS_DECLINED", world.human2.account_id),
        "withdrawn": ("ASK_STATUS_WITHDRAWN", world.agent.account_id),
        "timed_out": ("ASK_STATUS_TIMED_OUT", world.agent.account_id),
    }[winner]
    who = final.get("closedByAccountId") or final.get("answeredByAccountId")
    assert (final["status"], who) == expected


# -- the sweeper with two servers on one database ------------------------------------------------


METRICS_TOKEN = "sweeps-metrics-token-1234"


async def _sweeps(http: httpx.AsyncClient) -> float:
    """How many sweeps the server has run (its `compass_sweeps_total{result="ok"}`)."""
    reply = await http.get("/metrics", headers={"authorization": f"Bearer {METRICS_TOKEN}"})
    assert reply.status_code == 200, reply.text
    for family in text_string_to_metric_families(reply.text):
        for sample in family.samples:
            if sample.name == "compass_sweeps_total" and sample.labels == {"result": "ok"}:
                return sample.value
    raise AssertionError("no compass_sweeps_total in /metrics")


async def _sweeps_after(http: httpx.AsyncClient, count: float) -> bool:
    return await _sweeps(http) >= count


async def test_two_servers_expire_an_ask_at_its_deadline_exactly_once(database_url: str) -> None:
    env = {
        "COMPASS_SWEEP_INTERVAL_SECONDS": "0.2",
        "COMPASS_EXPIRY_GRACE_SECONDS": "1",
        "COMPASS_METRICS_TOKEN": METRICS_TOKEN,
    }
    with _server.serve(database_url, env=env) as a, _server.serve(database_url, env=env) as b:
        world = await _server.seed_world(database_url)
        async with (
            httpx.AsyncClient(base_url=a.url, timeout=30) as on_a,
            httpx.AsyncClient(base_url=b.url, timeout=30) as on_b,
        ):
            soon = datetime.now(UTC) + timedelta(seconds=1)
            ask_id, message = await new_ask(on_a, world, timed_ask(soon, "ASK_TIMEOUT_POLICY_FAIL"))
            picked, picked_message = await new_ask(
                on_b, world, timed_ask(soon, "ASK_TIMEOUT_POLICY_PICK_RECOMMENDED")
            )
            async with (
                open_stream(on_a, "WatchAsk", {"askId": ask_id}, world.agent.token) as on_a_watch,
                open_stream(on_b, "WatchAsk", {"askId": ask_id}, world.agent.token) as on_b_watch,
            ):
                for watch in (on_a_watch, on_b_watch):
                    assert (await watch.message())["ask"]["status"] == "ASK_STATUS_PENDING"  # pyright: ignore[reportIndexIssue, reportCallIssue, reportArgumentType] - JSON
                for watch in (on_a_watch, on_b_watch):
                    expired = (await watch.message(within=10))["ask"]
                    assert isinstance(expired, dict)
                    assert expired["status"] == "ASK_STATUS_EXPIRED"
                    assert "closedByAccountId" not in expired
                    assert isinstance(expired["closedAt"], str)
                    assert (await watch.end()).error() is None
            # PICK_RECOMMENDED waits out the grace (the runtime's own report would win).
            assert (await get_ask(on_a, world, picked))["status"] == "ASK_STATUS_PENDING"
            await wait_for_status(on_b, world, picked, "ASK_STATUS_EXPIRED")
            # Exactly once over time is the thing under test: several more sweeps of both.
            for server in (on_a, on_b):
                start = await _sweeps(server)
                await eventually(
                    lambda server=server, start=start: _sweeps_after(server, start + 3),
                    "three more sweeps",
                )
            listed = await call(
                on_a, "ListMessages", {"channelId": world.channel_id}, world.human.token
            )
            assert listed.ok, listed
            revisions = {m["messageId"]: int(m["revision"]) for m in listed.body["messages"]}  # pyright: ignore[reportUnknownVariableType, reportGeneralTypeIssues, reportAttributeAccessIssue] - JSON
            # Each expiry wrote exactly once: one new channel revision per ask, nothing more.
            first = int(str(message["revision"]))
            assert int(str(picked_message["revision"])) == first + 1
            assert revisions == {
                message["messageId"]: first + 2,
                picked_message["messageId"]: first + 3,
            }
            final = await get_ask(on_a, world, ask_id)
            assert final["status"] == "ASK_STATUS_EXPIRED"
