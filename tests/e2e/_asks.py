"""Connect-JSON request bodies for asks and answers, and posting an ask as the agent.

Plain dicts in the protobuf JSON mapping (lowerCamelCase names), as a browser or a foreign
agent would send them.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from tests.e2e import _connect

if TYPE_CHECKING:
    import httpx

Json = dict[str, object]

_client_ids = itertools.count(1)


def question(
    question_id: str, *option_ids: str, multi: bool = False, recommended: int | None = None
) -> Json:
    """A question whose options have the given ids (labels derived from them)."""
    q: Json = {
        "questionId": question_id,
        "question": f"What about {question_id}?",
        "header": question_id.upper(),
        "options": [
            {"id": option_id, "label": f"label {option_id}", "description": f"about {option_id}"}
            for option_id in option_ids
        ],
    }
    if multi:
        q["allowMultiple"] = True
    if recommended is not None:
        q["recommended"] = recommended
    return q


def ask_block(*questions: Json) -> Json:
    return {"ask": {"questions": list(questions)}}


def text_block(text: str) -> Json:
    return {"text": {"text": text}}


#: The runtime's gallery ask, as the mapper turns it into a block (option ids are indexes).
GALLERY_QUESTIONS: tuple[Json, ...] = (
    {
        "questionId": "db",
        "question": "Which database should the new service use?",
        "options": [
            {
                "id": "0",
                "label": "Postgres",
                "description": "Relational, strong consistency, JSONB support",
            },
            {
                "id": "1",
                "label": "SQLite",
                "description": "Embedded, zero-ops, great for single-node",
            },
            {"id": "2", "label": "MongoDB", "description": "Document store, flexible schema"},
        ],
        "recommended": 0,
    },
    {
        "questionId": "features",
        "question": "Which auth flows should ship in v1?",
        "options": [
            {"id": "0", "label": "Email + password"},
            {"id": "1", "label": "OAuth (Google, GitHub)"},
            {"id": "2", "label": "Magic links"},
            {"id": "3", "label": "SAML SSO", "description": "Enterprise; can be deferred"},
        ],
        "allowMultiple": True,
    },
)

#: The default ask of `post_ask`: single-select "db" (0-2) and multi-select "features" (0-3).
DEFAULT_ASK = ask_block(
    question("db", "0", "1", "2"), question("features", "0", "1", "2", "3", multi=True)
)


def answer(question_id: str, *chosen: str, custom_text: str = "") -> Json:
    entry: Json = {"questionId": question_id, "chosenOptionIds": list(chosen)}
    if custom_text:
        entry["customText"] = custom_text
    return entry


def respond(ask_id: str, *answers: Json) -> Json:
    return {"askId": ask_id, "answers": list(answers)}


def append_request(channel_id: str, *blocks: Json, client_message_id: str = "") -> Json:
    frame: Json = {"blocks": list(blocks)}
    if client_message_id:
        frame["clientMessageId"] = client_message_id
    return {"channelId": channel_id, "frame": frame}


async def post(
    client: httpx.AsyncClient,
    token: str,
    channel_id: str,
    *blocks: Json,
    client_message_id: str = "",
) -> Json:
    """AppendMessage as the agent; returns the stored message (fails unless OK)."""
    reply = await _connect.call(
        client,
        "AppendMessage",
        append_request(channel_id, *blocks, client_message_id=client_message_id),
        token,
    )
    assert reply.ok, reply
    message = reply.body["message"]
    assert isinstance(message, dict)
    return message  # pyright: ignore[reportUnknownVariableType] - JSON of a Message


def ask_ids(message: Json) -> list[str]:
    """The minted ask ids of a Message's ask blocks, in block order."""
    blocks = message.get("blocks", [])
    assert isinstance(blocks, list)
    return [str(block["ask"]["askId"]) for block in blocks if "ask" in block]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType] - JSON


async def post_ask(
    client: httpx.AsyncClient, token: str, channel_id: str, block: Json | None = None
) -> str:
    """Append one message holding one ask (DEFAULT_ASK unless given); return its ask_id."""
    message = await post(
        client,
        token,
        channel_id,
        block or DEFAULT_ASK,
        client_message_id=f"m-{next(_client_ids)}",
    )
    (ask_id,) = ask_ids(message)
    return ask_id
