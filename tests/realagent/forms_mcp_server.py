"""An MCP server of our own for the Elicitation hook tests: the official `mcp` SDK (stdio)
with one tool, `deploy`, that asks its client for a form (`elicitation/create`) and returns,
as plain text, what came back: `accept {"env": ..., ...}` (sorted JSON), `decline` or
`cancel`.

Run as `python -m tests.realagent.forms_mcp_server`. The SDK picks how the form travels by
the protocol version the client speaks: a request of its own mid-call (<= 2025-11-25), or,
as with Claude Code 2.1.318 (which speaks 2026-07-28), an `input_required` result naming
the `elicitation/create` request, the call then retried with the answer. The SDK checks the
accepted content against the form's model too (`replicas` 1-5), as a careful server does.
"""

from __future__ import annotations

import json
from typing import Annotated

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from pydantic import BaseModel, Field

FORM_MESSAGE = "Deploy settings"

app = MCPServer("forms")


class Deploy(BaseModel):
    env: str = Field(
        title="Environment",
        description="Where should it deploy?",
        json_schema_extra={
            "oneOf": [
                {"const": "staging", "title": "Staging"},
                {"const": "prod", "title": "Production"},
            ]
        },
    )
    replicas: int | None = Field(default=None, title="Replicas", ge=1, le=5)
    notify: bool | None = Field(default=None, title="Notify the team?")


def _form() -> Elicit[Deploy]:
    return Elicit(FORM_MESSAGE, Deploy)


@app.tool(structured_output=False)
async def deploy(settings: Annotated[ElicitationResult[Deploy], Resolve(_form)]) -> str:
    """Deploy the service, after asking where and how."""
    if isinstance(settings, AcceptedElicitation):
        return "accept " + json.dumps(settings.data.model_dump(exclude_none=True), sort_keys=True)
    return settings.action


if __name__ == "__main__":
    app.run()
