"""The MCP server object with Compass's three tools, on the official `mcp` SDK's low-level
`Server` (the high-level `MCPServer` derives input schemas from Python signatures and
validates arguments with pydantic; these tools keep the native ask schema and the mapper's
own error messages, so they are listed and dispatched by hand).

Both transports build it: `compass serve` mounts it at `/mcp` (streamable HTTP, stateless),
`compass mcp` runs it over stdio. Each says how a call finds its `CallContext`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from mcp.server import Server
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)

from compass_mcp import tools

if TYPE_CHECKING:
    from collections.abc import Callable

    from mcp.server.context import ServerRequestContext

    from compass_mcp.calls import AskTools, CallContext

NAME: Final = "compass"
INSTRUCTIONS: Final = (
    "Compass puts your questions to the people working with you and returns their typed "
    "answer. Use the ask tool whenever you need a decision from a person; it waits for them."
)

TOOLS: Final = (
    Tool(
        name=tools.ASK,
        description=tools.DESCRIPTIONS[tools.ASK],
        input_schema=tools.ASK_INPUT_SCHEMA,
        output_schema=tools.OUTPUT_SCHEMA,
        annotations=ToolAnnotations(
            title="Ask people", read_only_hint=False, destructive_hint=False, open_world_hint=True
        ),
    ),
    Tool(
        name=tools.ASK_WAIT,
        description=tools.DESCRIPTIONS[tools.ASK_WAIT],
        input_schema=tools.ASK_WAIT_INPUT_SCHEMA,
        output_schema=tools.OUTPUT_SCHEMA,
        annotations=ToolAnnotations(
            title="Wait for an answer", read_only_hint=True, open_world_hint=True
        ),
    ),
    Tool(
        name=tools.ASK_CANCEL,
        description=tools.DESCRIPTIONS[tools.ASK_CANCEL],
        input_schema=tools.ASK_CANCEL_INPUT_SCHEMA,
        output_schema=tools.OUTPUT_SCHEMA,
        annotations=ToolAnnotations(
            title="Withdraw an ask", read_only_hint=False, destructive_hint=True
        ),
    ),
)


def build_server(
    ask_tools: AskTools, context_of: Callable[[ServerRequestContext[Any, Any]], CallContext]
) -> Server[Any]:
    """The `mcp` Server listing the tools and running each call through `ask_tools` with
    the context `context_of` finds for the request."""

    async def list_tools(
        _ctx: ServerRequestContext[Any, Any], _params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=list(TOOLS))

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult:
        result = await ask_tools.call(params.name, dict(params.arguments or {}), context_of(ctx))
        return CallToolResult(
            content=[TextContent(type="text", text=result.text)],
            structured_content=result.structured,
            is_error=result.is_error,
        )

    server: Server[Any] = Server(
        NAME, instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool
    )
    # The SDK's default middleware is one OpenTelemetry span per message (mcp 2.3
    # lowlevel/server.py). Compass records spans only when tracing is configured
    # (compass_server.observe.tracing), with its own provider; the SDK's would go to the global
    # one, so the list is emptied.
    server.middleware.clear()
    return server


def progress_sender(ctx: ServerRequestContext[Any, Any]) -> Callable[[float, str], Any]:
    """A `CallContext.progress` for the request `ctx`: progress notifications against the
    client's progress token (nothing when it sent none)."""

    async def send(progress: float, message: str) -> None:
        await ctx.session.report_progress(progress, None, message)

    return send
