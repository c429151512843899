"""Pure domain rules: block invariants, request limits and answer validation (docs/spec.md §3, §4).

Nothing here does I/O. Every check that can find several problems returns (or raises with)
ALL of them as `FieldViolation`s, so a client can fix a request in one round trip. Field paths
are relative to the message being checked: `blocks[0].ask.questions[1].question_id` for a
block set, `answers[2].chosen_option_ids[0]` for a RespondToAskRequest; the service may prefix
them (e.g. `frame.`) when the blocks sit deeper in its request.
"""

from __future__ import annotations

from compass_core.ask_status import is_final

# The block limits live with the agent side, whose mapper must refuse exactly what the server
# refuses; they are re-exported here for the server's own callers.
from compass_core.limits import (
    MAX_ASKS_PER_MESSAGE,
    MAX_BLOCKS_PER_MESSAGE,
    MAX_CLOSE_REASON_LENGTH,
    MAX_ID_LENGTH,
    MAX_OPTIONS_PER_QUESTION,
    MAX_QUESTIONS_PER_ASK,
    NUL,
)
from compass_server.domain.answers import (
    answered_questions,
    check_answer_request,
    is_identical_answer,
    validate_answers,
)
from compass_server.domain.blocks import (
    ask_update_violations,
    block_violations,
    check_ask_update,
    check_blocks,
    same_ask,
    with_minted_ask_ids,
)
from compass_server.domain.limits import (
    CLOSE_STATUSES,
    DELIVERY_STATE_BY_NAME,
    DELIVERY_STATE_NAMES,
    MAX_ANSWERS,
    MAX_CHOSEN_PER_ANSWER,
    MAX_CUSTOM_TEXT_LENGTH,
    MAX_NAME_LENGTH,
    STATUS_BY_NAME,
    STATUS_NAMES,
    TIMEOUT_POLICY_BY_NAME,
    TIMEOUT_POLICY_NAMES,
    check_name,
    check_text,
    quote,
)
from compass_server.domain.outcomes import (
    check_close_request,
    check_decline_request,
    is_identical_close,
    is_identical_decline,
    outcome_message,
)

__all__ = [
    "CLOSE_STATUSES",
    "DELIVERY_STATE_BY_NAME",
    "DELIVERY_STATE_NAMES",
    "MAX_ANSWERS",
    "MAX_ASKS_PER_MESSAGE",
    "MAX_BLOCKS_PER_MESSAGE",
    "MAX_CHOSEN_PER_ANSWER",
    "MAX_CLOSE_REASON_LENGTH",
    "MAX_CUSTOM_TEXT_LENGTH",
    "MAX_ID_LENGTH",
    "MAX_NAME_LENGTH",
    "MAX_OPTIONS_PER_QUESTION",
    "MAX_QUESTIONS_PER_ASK",
    "NUL",
    "STATUS_BY_NAME",
    "STATUS_NAMES",
    "TIMEOUT_POLICY_BY_NAME",
    "TIMEOUT_POLICY_NAMES",
    "answered_questions",
    "ask_update_violations",
    "block_violations",
    "check_answer_request",
    "check_ask_update",
    "check_blocks",
    "check_close_request",
    "check_decline_request",
    "check_name",
    "check_text",
    "is_final",
    "is_identical_answer",
    "is_identical_close",
    "is_identical_decline",
    "outcome_message",
    "quote",
    "same_ask",
    "validate_answers",
    "with_minted_ask_ids",
]
