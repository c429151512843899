"""`compass demo`: a ready-to-use workspace with one human, one agent and one pending ask.

The example ask goes through the same path an agent's does: the runtime's own 2-question
`ask` call (its gallery example) is mapped by compass_core's EventMapper and appended by the
agent account, so the demo shows exactly what a real agent would produce. No agent runs
behind it, so no delivery receipt ever comes: the ask's lead-in says so (DEMO_NOTE), before a
newcomer answers and meets "No delivery receipt".
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Final

from compass_core import ConversationUpdated, EventMapper
from compass_server.store import AccountKind

if TYPE_CHECKING:
    from compass_server.store import Store

GALLERY_ASK_ARGS: Final[dict[str, object]] = {
    "questions": [
        {
            "id": "db",
            "question": "Which database should the new service use?",
            "options": [
                {
                    "label": "Postgres",
                    "description": "Relational, strong consistency, JSONB support",
                },
                {"label": "SQLite", "description": "Embedded, zero-ops, great for single-node"},
                {"label": "MongoDB", "description": "Document store, flexible schema"},
            ],
            "recommended": 0,
        },
        {
            "id": "features",
            "question": "Which auth flows should ship in v1?",
            "options": [
                {"label": "Email + password"},
                {"label": "OAuth (Google, GitHub)"},
                {"label": "Magic links"},
                {"label": "SAML SSO", "description": "Enterprise; can be deferred"},
            ],
            "multi": True,
        },
    ]
}


DEMO_NOTE: Final = (
    "Demo: no agent is connected to this channel, so nothing will receive your answer. Once "
    "you answer, this ask says “No delivery receipt”: that is expected here. An agent "
    "connected to Compass confirms what it received."
)
"""The first words of the demo's message: what a newcomer's answer will meet, and why."""


async def is_empty(store: Store) -> bool:
    """Whether the database has no accounts yet (a first start)."""
    return not await store.has_accounts()


async def seed(store: Store, url: str) -> dict[str, object]:
    """Create the demo workspace and return what a person needs to use it (tokens once)."""
    suffix = secrets.token_hex(3)
    workspace = await store.create_workspace(f"demo-{suffix}")
    channel = await store.create_channel(workspace.workspace_id, "general")
    human, human_token = await store.create_account(AccountKind.HUMAN, "Demo Human")
    agent, agent_token = await store.create_account(AccountKind.AGENT, "Demo Agent")
    await store.add_participant(channel.channel_id, human.account_id)
    await store.add_participant(channel.channel_id, agent.account_id)

    mapper = EventMapper(session=f"demo-{suffix}")
    events: list[object] = [
        {"type": "message_start", "message": {"role": "assistant", "content": []}},
        {
            "type": "message_end",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"{DEMO_NOTE}\n\nBefore I scaffold the service, two decisions:",
                    }
                ],
            },
        },
        {
            "type": "tool_execution_start",
            "toolCallId": "demo-ask",
            "toolName": "ask",
            "args": GALLERY_ASK_ARGS,
        },
    ]
    frame = None
    for event in events:
        for output in mapper.map(event):
            if isinstance(output, ConversationUpdated):
                frame = output.value
    assert frame is not None  # noqa: S101 - the gallery example is well-formed by construction
    message = await store.append_message(
        agent, channel.channel_id, frame.blocks, client_message_id=frame.client_message_id
    )
    return {
        "url": url,
        "workspace_id": workspace.workspace_id,
        "channel_id": channel.channel_id,
        "human": {"account_id": human.account_id, "name": human.name, "token": human_token},
        "agent": {"account_id": agent.account_id, "name": agent.name, "token": agent_token},
        "example_ask_id": message.ask_ids[0] if message.ask_ids else "",
    }
