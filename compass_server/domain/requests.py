"""Every check of an RPC request that needs no stored state, one function per RPC.

The application API (`compass_server.service.asks`) calls the function of an RPC first,
before any I/O: a malformed request is refused without touching the store, and the store runs
only the rules that must hold under its lock (`domain.verdicts`). Each function raises the first problem
class it finds as an `InvalidArgumentError` listing every violation of that class, in the
order the RPC's guards are documented (docs/spec.md §4 step 2 for RespondToAsk).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compass_core.limits import MAX_ID_LENGTH
from compass_server.domain.answers import check_answer_request
from compass_server.domain.blocks import check_blocks
from compass_server.domain.deliveries import check_delivery_request
from compass_server.domain.errors import FieldViolation, InvalidArgumentError
from compass_server.domain.limits import check_text
from compass_server.domain.outcomes import check_close_request, check_decline_request
from compass_server.domain.push import check_subscription

if TYPE_CHECKING:
    from compass_server.domain.push import NewSubscription
    from compass_server.domain.webhook_targets import AllowList
    from gen.compass.v1 import agent_pb2, comms_pb2


def check_id(field: str, value: str) -> None:
    """An id the caller names (channel, ask, message): non-empty, at most MAX_ID_LENGTH,
    no NUL, valid Unicode."""
    check_text(field, value, max_length=MAX_ID_LENGTH)


def check_not_negative(field: str, value: int) -> None:
    """A count or position the caller names: 0 or more."""
    if value < 0:
        raise InvalidArgumentError(
            f"invalid {field}",
            [FieldViolation(field=field, description=f"{field} must not be negative")],
        )


def check_page_size(page_size: int) -> None:
    """A list RPC's page size: 0 (the default) or more; the store caps large ones."""
    check_not_negative("page_size", page_size)


# -- CommsService --------------------------------------------------------------------------


def check_list_pending_asks(request: comms_pb2.ListPendingAsksRequest) -> None:
    check_page_size(request.page_size)


def check_list_messages(request: comms_pb2.ListMessagesRequest) -> None:
    check_id("channel_id", request.channel_id)
    check_page_size(request.page_size)


def check_get_ask(request: comms_pb2.GetAskRequest | agent_pb2.WatchAskRequest) -> None:
    check_id("ask_id", request.ask_id)


def check_watch_channel(request: comms_pb2.WatchChannelRequest) -> None:
    check_id("channel_id", request.channel_id)
    check_not_negative("after_revision", request.after_revision)


def check_respond_to_ask(request: comms_pb2.RespondToAskRequest) -> None:
    """docs/spec.md §4 step 2."""
    check_answer_request(request.ask_id, request.answers)


def check_decline_ask(request: comms_pb2.DeclineAskRequest) -> None:
    check_decline_request(request.ask_id, request.reason)


def check_add_push_subscription(
    request: comms_pb2.AddPushSubscriptionRequest, allow: AllowList
) -> NewSubscription:
    """The endpoint (https, or http to a host `allow` names; no internal address unless
    allowed), the subscriber's keys and the device's name (domain/push.py)."""
    return check_subscription(request, allow)


def check_remove_push_subscription(request: comms_pb2.RemovePushSubscriptionRequest) -> None:
    check_id("subscription_id", request.subscription_id)


# -- AgentService --------------------------------------------------------------------------


def check_get_channel(request: agent_pb2.GetChannelRequest) -> None:
    check_id("channel_id", request.channel_id)


def check_append_message(request: agent_pb2.AppendMessageRequest) -> None:
    """The channel id, then the frame: no message_id (the server assigns it), a
    client_message_id within bounds, blocks that hold every invariant with no ask ids."""
    check_id("channel_id", request.channel_id)
    if request.frame.message_id:
        raise InvalidArgumentError(
            "frame.message_id must be empty on AppendMessage (the server assigns it)"
        )
    check_text(
        "client_message_id",
        request.frame.client_message_id,
        max_length=MAX_ID_LENGTH,
        required=False,
    )
    check_blocks(request.frame.blocks, minted=False)


def check_update_message(request: agent_pb2.UpdateMessageRequest) -> None:
    """The message id, then the block invariants that need no stored state; which ask ids
    the frame must carry depends on the stored asks (`verdicts.fit_update`, under the lock)."""
    check_id("frame.message_id", request.frame.message_id)
    check_blocks(request.frame.blocks, minted=None)


def check_close_ask(request: agent_pb2.CloseAskRequest) -> None:
    check_close_request(request.ask_id, request.status, request.reason, request.answers)


def check_report_delivery(request: agent_pb2.ReportDeliveryRequest) -> None:
    check_delivery_request(request.ask_id, request.state, request.detail, request.payload)
