"""The server's limits on a message's blocks (and on a delivery receipt's text), shared by
the agent side and the server.

The server (`compass_server.domain`) refuses a frame that breaks one of these, and with it
every block of the frame. The mapper checks the same numbers so that it bounces an ask the
server would refuse as one counted UnmappedEvent, instead of posting a frame that fails as a
whole. The bridge keeps a delivery receipt within the receipt limits the same way. One
definition, imported by both sides, keeps the two from drifting apart.

Besides these sizes the server refuses NUL (U+0000) in any text, because PostgreSQL cannot
store it (`NUL` below).
"""

from __future__ import annotations

from typing import Final

MAX_BLOCKS_PER_MESSAGE: Final = 1000
"""Most blocks (text and ask) one message holds."""
MAX_ASKS_PER_MESSAGE: Final = 64
"""Most ask blocks one message holds. Also keeps the server's change notification, which
lists a message's ask ids, far below PostgreSQL's 8000-byte NOTIFY payload limit."""
MAX_QUESTIONS_PER_ASK: Final = 100
"""Most questions one ask holds."""
MAX_OPTIONS_PER_QUESTION: Final = 100
"""Most options one question offers."""
MAX_ID_LENGTH: Final = 200
"""Longest ask_id, question_id, option id or client_message_id, in characters."""
MAX_DELIVERY_DETAIL_LENGTH: Final = 1000
"""Longest detail of a delivery receipt (ReportDelivery), in characters: what the side that
posted an ask says, for people, about what the agent received."""
MAX_DELIVERY_PAYLOAD_LENGTH: Final = 65536
"""Longest payload of a delivery receipt (what was handed to the agent), in characters."""
MAX_CLOSE_REASON_LENGTH: Final = 500
"""Longest DeclineAsk / CloseAsk reason (the `asks.close_reason` column's CHECK); the MCP
tools' `ask_cancel` reason is one."""
NUL: Final = "\x00"
"""The one character no stored text may contain."""
