"""The inbound SMTP listener's own limits (email/inbound.py), before any reply is read: the
sessions one process holds open are capped (421 past the cap), and a session frees its slot
when it ends."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, cast

from compass_server.email.inbound import listening

if TYPE_CHECKING:
    from compass_server.service.email import Email


async def _greeting(port: int) -> tuple[bytes, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    line = await asyncio.wait_for(reader.readline(), 5)
    return line, writer


async def test_sessions_past_the_cap_are_told_to_come_back_later() -> None:
    unused = cast("Email", object())  # no session here reaches a reply
    async with listening(
        unused, host="127.0.0.1", port=0, reply_domain="reply.compass.test", most=1
    ) as port:
        first, holder = await _greeting(port)
        assert first.startswith(b"220 reply.compass.test")
        busy, other = await _greeting(port)
        assert busy.startswith(b"421 4.3.2")
        other.close()
        holder.write(b"QUIT\r\n")
        await holder.drain()
        holder.close()
        await holder.wait_closed()

        async def free_again() -> bytes:
            while True:
                line, writer = await _greeting(port)
                writer.close()
                if line.startswith(b"220"):
                    return line
                await asyncio.sleep(0.05)

        assert (await asyncio.wait_for(free_again(), 5)).startswith(b"220")
