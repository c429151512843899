"""Where handlers find who is calling: the account the gate authenticated for the current
request, and the token it was admitted with (ContextVars: the Connect handler runs in the
gate's task)."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import TYPE_CHECKING, Generic, TypeVar

from compass_server.domain.errors import UnauthenticatedError

if TYPE_CHECKING:
    from collections.abc import Generator

A = TypeVar("A")


class AuthContext(Generic[A]):
    """Where handlers find what the gate learned about the current request: the account it
    authenticated and the token it was admitted with."""

    def __init__(self) -> None:
        self._var: ContextVar[A | None] = ContextVar("compass_account", default=None)
        self._token: ContextVar[str] = ContextVar("compass_token", default="")

    def current(self) -> A:
        """The caller's account.

        Raises:
            UnauthenticatedError: called outside a request that passed the gate.
        """
        account = self._var.get()
        if account is None:
            raise UnauthenticatedError("authentication required")
        return account

    def token(self) -> str:
        """The bearer token the current request was admitted with ("" outside one)."""
        return self._token.get()

    @contextlib.contextmanager
    def bound(self, account: A, token: str = "") -> Generator[None]:
        account_reset = self._var.set(account)
        token_reset = self._token.set(token)
        try:
            yield
        finally:
            self._token.reset(token_reset)
            self._var.reset(account_reset)
