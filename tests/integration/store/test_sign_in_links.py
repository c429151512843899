"""One-time sign-in links (issue 13): a code works once, before it expires, for an enabled
person; it becomes a session token that `revoke_sessions` ends without touching the
account's ordinary tokens."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from compass_server.domain.errors import FailedPreconditionError, NotFoundError
from compass_server.store.postgres import PostgresStore
from tests.integration.store._seed import seed

MINUTES = timedelta(minutes=15)


async def test_a_code_signs_in_once_and_its_session_ends_on_revocation(
    store: PostgresStore,
) -> None:
    world = await seed(store)
    code, expires_at = await store.create_sign_in_link(world.human.account_id, MINUTES)
    assert code.startswith("cmpl_")
    assert expires_at > world.human.created_at
    exchanged = await store.exchange_sign_in_link(code)
    assert exchanged is not None
    account, session = exchanged
    assert account.account_id == world.human.account_id
    assert session != world.human_token
    authenticated = await store.authenticate(session)
    assert authenticated is not None
    assert authenticated.account_id == world.human.account_id
    assert await store.exchange_sign_in_link(code) is None  # once only

    unused, _ = await store.create_sign_in_link(world.human.account_id, MINUTES)
    assert await store.revoke_sessions(world.human.account_id) == (1, 1)
    assert await store.authenticate(session) is None
    assert await store.exchange_sign_in_link(unused) is None
    # The ordinary token was not a session: it still works.
    assert await store.authenticate(world.human_token) is not None
    assert await store.revoke_sessions(world.human.account_id) == (0, 0)
    with pytest.raises(NotFoundError):
        await store.revoke_sessions("acct_nobody")


async def test_expired_unknown_and_foreign_codes_sign_nobody_in(store: PostgresStore) -> None:
    world = await seed(store)
    expired, _ = await store.create_sign_in_link(world.human.account_id, timedelta(seconds=-1))
    assert await store.exchange_sign_in_link(expired) is None
    for code in ("", "cmpl_", "cmpl_" + "A" * 43, "cmp_notacode", "cmpl_" + "x" * 500):
        assert await store.exchange_sign_in_link(code) is None
    # Only enabled people get links; an account disabled after its link was made cannot use it.
    with pytest.raises(FailedPreconditionError):
        await store.create_sign_in_link(world.agent.account_id, MINUTES)
    with pytest.raises(NotFoundError):
        await store.create_sign_in_link("acct_nobody", MINUTES)
    late, _ = await store.create_sign_in_link(world.human2.account_id, MINUTES)
    await store.disable_account(world.human2.account_id)
    assert await store.exchange_sign_in_link(late) is None
    with pytest.raises(FailedPreconditionError):
        await store.create_sign_in_link(world.human2.account_id, MINUTES)
    assert await store.authenticate("cmpl_" + "A" * 43) is None  # a code is not a token


async def test_two_exchanges_of_one_code_at_once_sign_in_exactly_once(
    database_url: str,
) -> None:
    async with PostgresStore(database_url, pool_min=2, pool_max=4) as store:
        world = await seed(store)
        for _ in range(5):
            code, _ = await store.create_sign_in_link(world.human.account_id, MINUTES)
            results = await asyncio.gather(*(store.exchange_sign_in_link(code) for _ in range(4)))
            assert sum(result is not None for result in results) == 1
