"""The Web Push use cases (docs/answering/push.md): a person's devices, the key to subscribe
with, and the answer a notification's button sends, one method each, for any front door.

CommsService's handlers call the device methods as the signed-in person; POST /push/answer
(`push/answer.py`) calls `answer` with nothing but the token the notification carried. As in
`service/asks.py`, each checks its request first (`domain/requests`), then calls the store
(`store.PushStore`), and none knows Connect or HTTP.

`answer` answers through the application's RespondToAsk use case (`Asks.respond_to_ask`) as
the person the token was pushed to, so a tap is held to every rule a browser's answer is:
the request check, visibility and participation, the judge under the channel lock, the
metrics, and the agent's WatchAsk waking through NOTIFY.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from compass_server.domain import requests
from compass_server.domain.errors import (
    FailedPreconditionError,
    NotFoundError,
    PermissionDeniedError,
)
from compass_server.domain.push import MAX_SUBSCRIPTIONS
from compass_server.store import AccountKind
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence

    from compass_server.domain.webhook_targets import AllowList
    from compass_server.push.keys import VapidSource
    from compass_server.service.asks import Asks
    from compass_server.store import AccountRow, AskRow, PushStore, PushSubscriptionRow

UNKNOWN_TOKEN: Final = "unknown or used answer token"  # noqa: S105 - words, not a secret
"""The one answer for a token never issued, spent, or voided (revoke-sessions)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tapped:
    """What a notification's answer did."""

    status: int
    """The ask's status (comms_pb2.AskStatus) after it."""
    answered: bool
    """Whether this tap answered it (else the ask had ended already: nothing was written)."""


class Push:
    """The push use cases on the store's `PushStore` port."""

    def __init__(
        self, store: PushStore, asks: Asks, keys: VapidSource, *, allow: AllowList
    ) -> None:
        """
        Args:
            store: the devices and answer tokens.
            asks: the application API the answers go through.
            keys: the VAPID key (configured, or kept in the database).
            allow: COMPASS_PUSH_ALLOW_HOSTS.
        """
        self._store = store
        self._asks = asks
        self._keys = keys
        self._allow = allow

    async def vapid_public_key(self, actor: AccountRow) -> str:
        """GetPushConfig: the applicationServerKey browsers subscribe with."""
        del actor  # any signed-in person
        return (await self._keys.key()).public_key

    async def add_subscription(
        self, actor: AccountRow, request: comms_pb2.AddPushSubscriptionRequest
    ) -> str:
        """AddPushSubscription: one of `actor`'s devices (the same endpoint again keeps its
        id and takes the new keys and name).

        Raises:
            PermissionDeniedError: `actor` is an agent (people answer; agents ask).
            InvalidArgumentError: naming each bad field; nothing is stored.
            ResourceExhaustedError: `actor` has MAX_SUBSCRIPTIONS devices already.
        """
        if actor.kind is not AccountKind.HUMAN:
            raise PermissionDeniedError("only people's accounts receive pushes")
        checked = requests.check_add_push_subscription(request, self._allow)
        return await self._store.add_push_subscription(actor, checked, most=MAX_SUBSCRIPTIONS)

    async def remove_subscription(
        self, actor: AccountRow, request: comms_pb2.RemovePushSubscriptionRequest
    ) -> None:
        """RemovePushSubscription: one of `actor`'s own devices (NOT_FOUND otherwise)."""
        requests.check_remove_push_subscription(request)
        await self._store.remove_push_subscription(actor, request.subscription_id)

    async def list_subscriptions(self, actor: AccountRow) -> Sequence[PushSubscriptionRow]:
        """ListPushSubscriptions: `actor`'s own devices, oldest first."""
        return await self._store.list_push_subscriptions(actor)

    async def answer(self, token: str, option_id: str) -> Tapped:
        """A notification's button: answer the token's ask with `option_id`, as the person the
        token was pushed to, through RespondToAsk's use case. The token works once.

        Raises:
            NotFoundError: the token is unknown, spent or voided, or its ask is no longer
                visible to its person (all the same UNKNOWN_TOKEN).
            PermissionDeniedError: its person's account is disabled, or no longer takes part
                in the ask's channel.
            InvalidArgumentError: `option_id` does not answer the ask (not one of its
                question's options, or the ask has more than one question); the token is
                not spent.
        """
        found = await self._store.answer_token(token) if token else None
        if found is None or found.used:
            raise NotFoundError(UNKNOWN_TOKEN)
        account = found.account
        if account.disabled:
            raise PermissionDeniedError("this account is disabled")
        try:
            row = await self._asks.get_ask(account, comms_pb2.GetAskRequest(ask_id=found.ask_id))
        except NotFoundError:
            raise NotFoundError(UNKNOWN_TOKEN) from None
        if row.final:
            return Tapped(status=row.ask.status, answered=False)
        try:
            row = await self._asks.respond_to_ask(account, _tap(row, option_id))
        except FailedPreconditionError:
            # Answered (or closed) meanwhile by someone else: say how it ended.
            row = await self._asks.get_ask(account, comms_pb2.GetAskRequest(ask_id=found.ask_id))
            if not row.final:
                raise
            return Tapped(status=row.ask.status, answered=False)
        if not await self._store.spend_answer_token(token):
            raise NotFoundError(UNKNOWN_TOKEN)  # a second tap of the same token won the race
        return Tapped(status=row.ask.status, answered=True)


def _tap(row: AskRow, option_id: str) -> comms_pb2.RespondToAskRequest:
    """The RespondToAsk a tap means: `option_id` chosen for the ask's (first) question; the
    judge refuses it when that does not answer the ask."""
    question = row.ask.questions[0].question_id if row.ask.questions else ""
    return comms_pb2.RespondToAskRequest(
        ask_id=row.ask.ask_id,
        answers=[comms_pb2.AskQuestionAnswer(question_id=question, chosen_option_ids=[option_id])],
    )
