"""process.py: what the omp and ACP integrations share about running beside an agent (here:
reading its output line by line, an overlong line skipped whole)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings, strategies as st

from compass_bridge import process as bridge_process


async def _read_all(data: bytes, chunk_sizes: list[int]) -> list[bytes | None]:
    reader = asyncio.StreamReader()
    position = 0
    for size in chunk_sizes:
        reader.feed_data(data[position : position + size])
        position += size
    reader.feed_data(data[position:])
    reader.feed_eof()
    return [line async for line in bridge_process.read_lines(reader)]


line_bodies = st.binary(max_size=30).map(lambda b: b.replace(b"\n", b""))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(line_bodies, max_size=8),
    line_bodies,
    st.lists(st.integers(min_value=1, max_value=13), max_size=10),
)
def test_lines_are_read_whole_and_overlong_ones_skipped_whole(
    lines: list[bytes], tail: bytes, chunks: list[int]
) -> None:
    limit = 12
    original = bridge_process.MAX_LINE_BYTES, bridge_process._CHUNK  # pyright: ignore[reportPrivateUsage] - the test shrinks the limits
    bridge_process.MAX_LINE_BYTES, bridge_process._CHUNK = limit, 5  # pyright: ignore[reportPrivateUsage] - as above
    try:
        data = b"".join(line + b"\n" for line in lines) + tail
        got = asyncio.run(_read_all(data, chunks))
    finally:
        bridge_process.MAX_LINE_BYTES, bridge_process._CHUNK = original  # pyright: ignore[reportPrivateUsage] - as above
    expected: list[bytes | None] = [line if len(line) <= limit else None for line in lines]
    if tail:
        expected.append(tail if len(tail) <= limit else None)
    assert got == expected
