"""What both transports share: the mapper, the poster and its worker, the answer wait.

`runner.Bridge` (omp's RPC mode) and `acp.AcpBridge` (an ACP client) differ in how they
hear the runtime and how they hand it an answer; both map its events with one EventMapper,
post frames through one Poster, wait for a participant's answer on WatchAsk, and stop when
the server refuses the bridge itself (`failure`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from compass_agent import EventMapper
from compass_server.bridge.poster import FatalServerError, Poster
from compass_server.bridge.watch import until_answered

if TYPE_CHECKING:
    from compass_server.bridge.poster import AgentApi
    from gen.compass.v1 import comms_pb2

__all__ = ["BridgeCore"]

logger = logging.getLogger(__name__)


class BridgeCore:
    """One runtime bridged to one Compass channel: the transport-independent part."""

    def __init__(
        self,
        *,
        api: AgentApi,
        channel_id: str,
        run_id: str,
        max_backoff: float,
        initial_backoff: float,
    ) -> None:
        self._api = api
        self._max_backoff = max_backoff
        self._initial_backoff = initial_backoff
        self.mapper = EventMapper(session=run_id)
        self.poster = Poster(
            api,
            channel_id,
            run_id=run_id,
            max_backoff=max_backoff,
            initial_backoff=initial_backoff,
        )
        self.failure: asyncio.Future[FatalServerError] = asyncio.get_running_loop().create_future()
        """Resolved when the server refuses the bridge itself; the session then stops."""
        self.delivered: int = 0
        """Answers delivered to the runtime (a whole ask each)."""

    async def _until_answered(self, ask_id: str) -> comms_pb2.Ask:
        return await until_answered(
            self._api,
            ask_id,
            initial_backoff=self._initial_backoff,
            max_backoff=self._max_backoff,
        )

    async def run_poster(self) -> None:
        """The Poster's worker; a fatal refusal resolves `failure` instead of raising."""
        try:
            await self.poster.run()
        except FatalServerError as exc:
            self._fail(exc)
        except Exception as exc:
            logger.exception("agent-bridge: the poster failed")
            self._fail(FatalServerError(f"internal error ({type(exc).__name__})"))

    def _fail(self, exc: FatalServerError) -> None:
        if not self.failure.done():
            self.failure.set_result(exc)
