"""Putting asks in a channel the way an agent does: AgentService over real HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeVar

import httpx
from google.protobuf import json_format

from compass_core import ConversationUpdated, EventMapper
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from datetime import datetime

    from google.protobuf.message import Message
    from playwright.async_api import Request

    from tests._server import Account, RunningServer

MessageT = TypeVar("MessageT", bound="Message")

GALLERY_FIXTURE: Final = (
    Path(__file__).parent.parent / "fixtures" / "events" / "gallery-ask-fixture.json"
)


def sent(request: Request, message: MessageT) -> MessageT:
    """The Connect-JSON request the page sent, read into `message` (strictly: a field the
    message lacks fails). Compared as messages, not as JSON: the generated client writes
    proto3 JSON, which leaves out fields at their zero value."""
    json_format.Parse(request.post_data or "", message)
    return message


def gallery_frame(*, session: str = "browser") -> comms_pb2.MessageUpdated:
    """The runtime's own 2-question ask example, mapped by EventMapper as the bridge does."""
    args: object = json.loads(GALLERY_FIXTURE.read_text(encoding="utf-8"))["args"]
    mapper = EventMapper(session=session)
    events: list[object] = [
        {"type": "message_start", "message": {"role": "assistant", "content": []}},
        {
            "type": "message_end",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Two decisions before I start:"}],
            },
        },
        {"type": "tool_execution_start", "toolCallId": "t1", "toolName": "ask", "args": args},
    ]
    frames = [
        output.value
        for event in events
        for output in mapper.map(event)
        if isinstance(output, ConversationUpdated)
    ]
    assert frames, "the gallery example must map to a frame"
    return frames[-1]


def ask_frame(
    *questions: comms_pb2.AskQuestion,
    text: str = "",
    client_message_id: str = "",
    deadline: datetime | None = None,
    on_timeout: comms_pb2.AskTimeoutPolicy = comms_pb2.ASK_TIMEOUT_POLICY_UNSPECIFIED,
) -> comms_pb2.MessageUpdated:
    """A frame holding optional text and one Ask of `questions` (built directly, for cases
    the runtime's mapper would not produce, such as an out-of-range recommendation), with
    an optional `deadline` and `on_timeout` policy."""
    blocks: list[comms_pb2.MessageBlock] = []
    if text:
        blocks.append(comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text=text)))
    ask = comms_pb2.Ask(questions=questions, on_timeout=on_timeout)
    if deadline is not None:
        ask.deadline.FromDatetime(deadline)
    blocks.append(comms_pb2.MessageBlock(ask=ask))
    return comms_pb2.MessageUpdated(client_message_id=client_message_id, blocks=blocks)


def two_questions(
    *,
    deadline: datetime | None = None,
    on_timeout: comms_pb2.AskTimeoutPolicy = comms_pb2.ASK_TIMEOUT_POLICY_UNSPECIFIED,
) -> comms_pb2.MessageUpdated:
    """The gallery's two questions (a recommended single-select, a multi-select), built
    directly so a deadline can go with them."""
    return ask_frame(
        question("db", "Which database?", "Postgres", "SQLite", "MongoDB", recommended=0),
        question(
            "features", "Which sign-in methods?", "Email", "OAuth", "SAML", allow_multiple=True
        ),
        text="Two decisions before I start:",
        deadline=deadline,
        on_timeout=on_timeout,
    )


def question(
    question_id: str,
    text: str,
    *labels: str,
    header: str = "",
    allow_multiple: bool = False,
    recommended: int | None = None,
    descriptions: dict[int, str] | None = None,
    previews: dict[int, str] | None = None,
    free_text: comms_pb2.FreeText = comms_pb2.FREE_TEXT_UNSPECIFIED,
) -> comms_pb2.AskQuestion:
    options = [
        comms_pb2.AskOption(
            id=str(index),
            label=label,
            description=(descriptions or {}).get(index, ""),
            preview=(previews or {}).get(index, ""),
        )
        for index, label in enumerate(labels)
    ]
    built = comms_pb2.AskQuestion(
        question_id=question_id,
        question=text,
        header=header,
        options=options,
        allow_multiple=allow_multiple,
        free_text=free_text,
    )
    if recommended is not None:
        built.recommended = recommended
    return built


async def rpc(
    server: RunningServer, account: Account, service: str, method: str, body: object
) -> dict[str, object]:
    """One unary Connect-JSON call; raises AssertionError with the server's answer on failure."""
    async with httpx.AsyncClient() as client:
        response = await client.post(
            server.rpc_url(service, method),
            json=body,
            headers={"authorization": f"Bearer {account.token}"},
        )
    assert response.status_code == 200, response.text
    result = response.json()
    assert isinstance(result, dict)
    return result


async def append(
    server: RunningServer, agent: Account, channel_id: str, frame: comms_pb2.MessageUpdated
) -> comms_pb2.Message:
    """AppendMessage as `agent`; the stored message (with minted ask ids)."""
    body = {"channelId": channel_id, "frame": json_format.MessageToDict(frame)}
    result = await rpc(server, agent, "AgentService", "AppendMessage", body)
    message = result["message"]
    assert isinstance(message, dict)
    return json_format.ParseDict(message, comms_pb2.Message())


async def get_ask(server: RunningServer, human: Account, ask_id: str) -> comms_pb2.Ask:
    """CommsService/GetAsk as `human`: the ask as stored, with its answer state."""
    result = await rpc(server, human, "CommsService", "GetAsk", {"askId": ask_id})
    ask = result["ask"]
    assert isinstance(ask, dict)
    return json_format.ParseDict(ask, comms_pb2.Ask())


def ask_ids(message: comms_pb2.Message) -> list[str]:
    return [block.ask.ask_id for block in message.blocks if block.WhichOneof("block") == "ask"]


async def close_ask(
    server: RunningServer,
    agent: Account,
    ask_id: str,
    status: str,
    *,
    reason: str = "",
    answers: list[dict[str, object]] | None = None,
) -> dict[str, object]:
    """AgentService/CloseAsk as the asking agent (`status`: "ASK_STATUS_WITHDRAWN" or
    "ASK_STATUS_TIMED_OUT"); the ask as closed, in Connect-JSON."""
    body: dict[str, object] = {"askId": ask_id, "status": status, "reason": reason}
    if answers is not None:
        body["answers"] = answers
    result = await rpc(server, agent, "AgentService", "CloseAsk", body)
    ask = result["ask"]
    assert isinstance(ask, dict)
    return ask


async def report_delivery(
    server: RunningServer,
    agent: Account,
    ask_id: str,
    state: str,
    *,
    detail: str = "",
    payload: str = "",
) -> dict[str, object]:
    """AgentService/ReportDelivery as the asking agent (`state`: a DeliveryState name); the
    ask with its receipt, in Connect-JSON."""
    body = {"askId": ask_id, "state": state, "detail": detail, "payload": payload}
    result = await rpc(server, agent, "AgentService", "ReportDelivery", body)
    ask = result["ask"]
    assert isinstance(ask, dict)
    return ask
