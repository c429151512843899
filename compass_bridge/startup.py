"""The bridge's start-up check: is the token an agent's, and may it post in the channel?

Without it, a person's token or a mistyped channel id ran the runtime, failed every post,
and still exited 0. One GetChannel call before anything starts says which is wrong. A
server that cannot be reached now is not a configuration error (it may come up; the bridge
retries its posts), so the bridge then goes on with a warning.
"""

from __future__ import annotations

import logging

from compass_bridge.client import AgentClient, RpcError

logger = logging.getLogger(__name__)


async def start_problem(server: str, token: str, channel_id: str) -> str | None:
    """What is wrong with the token or the channel, in one line; None when the server
    accepts both (or could not be asked)."""
    try:
        await AgentClient(server, token).get_channel(channel_id)
    except RpcError as exc:
        return _explain(exc, channel_id)
    return None


def _explain(exc: RpcError, channel_id: str) -> str | None:
    match exc.code:
        case "unauthenticated":
            return "the server did not accept the token (unknown, or its account is disabled)"
        case "permission_denied" if "may not call" in exc.message:
            return "the token is not an agent's: use an agent account's token"
        case "permission_denied":
            return f"this agent does not participate in channel {channel_id!r}"
        case "not_found":
            return f"channel {channel_id!r} does not exist or is not visible to this agent"
        case "invalid_argument":
            return f"channel {channel_id!r} is not a valid channel id"
        case _:
            logger.warning(
                "could not check the token and channel with the server (%s); going on", exc.code
            )
            return None
