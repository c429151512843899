"""Seeding helpers for store-backed tests: a small world of accounts, and block builders.

Reusable by any test that has a `Store` (the server tests build on it too):

    world = await seed(store)
    message = await world.post(store, ask(question("db", "0", "1")))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from compass_server.domain.verdicts import (
    fit_update,
    judge_answer,
    judge_close,
    judge_decline,
    judge_delivery,
)
from compass_server.store import (
    AccountKind,
    AccountRow,
    AskStore,
    ChannelRow,
    MessageRow,
    WorkspaceRow,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence

    from compass_server.store import AskRow


class Seedable(AskStore, Protocol):
    """What `seed` needs: the handlers' store plus the admin calls that build a world (the
    PostgreSQL store, or the in-memory double of `tests/memory_store.py`)."""

    async def create_workspace(self, name: str) -> WorkspaceRow: ...
    async def create_channel(self, workspace_id: str, name: str) -> ChannelRow: ...
    async def create_account(self, kind: AccountKind, name: str) -> tuple[AccountRow, str]: ...
    async def add_workspace_member(self, workspace_id: str, account_id: str) -> None: ...
    async def add_participant(self, channel_id: str, account_id: str) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class World:
    """Two workspaces. In `workspace`/`channel`: `agent`, `human` and `human2` participate,
    `member` is only a workspace member (sees, cannot act). `outsider` participates in
    `other_channel` of `other_workspace` and sees nothing of `workspace`."""

    workspace: WorkspaceRow
    channel: ChannelRow
    other_workspace: WorkspaceRow
    other_channel: ChannelRow
    agent: AccountRow
    agent_token: str
    human: AccountRow
    human_token: str
    human2: AccountRow
    member: AccountRow
    outsider: AccountRow

    async def post(
        self, store: AskStore, *blocks: comms_pb2.MessageBlock, client_message_id: str = ""
    ) -> MessageRow:
        """Append `blocks` to `channel` as `agent`."""
        return await store.append_message(
            self.agent, self.channel.channel_id, blocks, client_message_id=client_message_id
        )


# The store's writes as the service calls them, handing in the domain's judges (the
# service's own request checks come first there: tests/unit/server/service covers those).


async def answer_ask(
    store: AskStore,
    actor: AccountRow,
    ask_id: str,
    answers: Sequence[comms_pb2.AskQuestionAnswer],
) -> AskRow:
    return await store.answer_ask(actor, ask_id, judge_answer(actor.account_id, answers))


async def decline_ask(store: AskStore, actor: AccountRow, ask_id: str, reason: str = "") -> AskRow:
    return await store.decline_ask(actor, ask_id, judge_decline(actor.account_id, reason))


async def close_ask(
    store: AskStore,
    actor: AccountRow,
    ask_id: str,
    status: comms_pb2.AskStatus,
    reason: str = "",
    answers: Sequence[comms_pb2.AskQuestionAnswer] = (),
) -> AskRow:
    judge = judge_close(actor.account_id, status, reason, answers)
    return await store.close_ask(actor, ask_id, judge)


async def report_delivery(
    store: AskStore,
    actor: AccountRow,
    ask_id: str,
    state: comms_pb2.DeliveryState,
    detail: str = "",
    payload: str = "",
) -> AskRow:
    judge = judge_delivery(actor.account_id, state, detail, payload)
    return await store.report_delivery(actor, ask_id, judge)


async def update_message(
    store: AskStore, actor: AccountRow, message_id: str, blocks: Sequence[comms_pb2.MessageBlock]
) -> MessageRow:
    return await store.update_message(actor, message_id, blocks, fit_update)


async def seed(store: Seedable, *, prefix: str = "") -> World:
    """Create the accounts, workspaces and channels of a `World` (names get `prefix`)."""
    workspace = await store.create_workspace(f"{prefix}acme")
    channel = await store.create_channel(workspace.workspace_id, "general")
    other_workspace = await store.create_workspace(f"{prefix}globex")
    other_channel = await store.create_channel(other_workspace.workspace_id, "general")
    agent, agent_token = await store.create_account(AccountKind.AGENT, "Coding Agent")
    human, human_token = await store.create_account(AccountKind.HUMAN, "Ada")
    human2, _ = await store.create_account(AccountKind.HUMAN, "Grace")
    member, _ = await store.create_account(AccountKind.HUMAN, "Watcher")
    outsider, _ = await store.create_account(AccountKind.HUMAN, "Mallory")
    for account in (agent, human, human2):
        await store.add_participant(channel.channel_id, account.account_id)
    await store.add_workspace_member(workspace.workspace_id, member.account_id)
    await store.add_participant(other_channel.channel_id, outsider.account_id)
    return World(
        workspace=workspace,
        channel=channel,
        other_workspace=other_workspace,
        other_channel=other_channel,
        agent=agent,
        agent_token=agent_token,
        human=human,
        human_token=human_token,
        human2=human2,
        member=member,
        outsider=outsider,
    )


def text(value: str) -> comms_pb2.MessageBlock:
    return comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text=value))


def option(option_id: str, label: str = "") -> comms_pb2.AskOption:
    return comms_pb2.AskOption(id=option_id, label=label or f"label {option_id}")


def question(
    question_id: str,
    *option_ids: str,
    multi: bool = False,
    header: str = "",
    recommended: int | None = None,
) -> comms_pb2.AskQuestion:
    """A question whose options have the given ids (labels derived from them)."""
    q = comms_pb2.AskQuestion(
        question_id=question_id,
        question=f"What about {question_id}?",
        header=header,
        options=[option(option_id) for option_id in option_ids],
        allow_multiple=multi,
    )
    if recommended is not None:
        q.recommended = recommended
    return q


def ask(*questions: comms_pb2.AskQuestion, ask_id: str = "") -> comms_pb2.MessageBlock:
    return comms_pb2.MessageBlock(ask=comms_pb2.Ask(ask_id=ask_id, questions=questions))


def with_answer_state(**fields: object) -> comms_pb2.MessageBlock:
    """An ask block carrying the answer state an agent must never send: one flag per field
    named (`chosen`, `custom_text`, `timed_out`, `by`, `at`, `name`)."""
    block = ask(question("db", "0", "1"))
    q = block.ask.questions[0]
    if "chosen" in fields:
        q.chosen_option_ids.append("0")
    if "custom_text" in fields:
        q.custom_text = "typed"
    if "timed_out" in fields:
        q.timed_out = True
    if "by" in fields:
        block.ask.answered_by_account_id = "acct_forged"
    if "at" in fields:
        block.ask.answered_at.GetCurrentTime()
    if "name" in fields:
        block.ask.answered_by_name = "Forger"
    return block


def answer(question_id: str, *chosen: str, custom_text: str = "") -> comms_pb2.AskQuestionAnswer:
    return comms_pb2.AskQuestionAnswer(
        question_id=question_id, chosen_option_ids=chosen, custom_text=custom_text
    )


def with_ask_ids(
    blocks: tuple[comms_pb2.MessageBlock, ...] | list[comms_pb2.MessageBlock],
    ask_ids: tuple[str, ...],
) -> list[comms_pb2.MessageBlock]:
    """Copies of `blocks` whose i-th ask carries `ask_ids[i]` (what the bridge sends on update),
    and status PENDING where it had none (as every ask reads back until it is final)."""
    result: list[comms_pb2.MessageBlock] = []
    ids = iter(ask_ids)
    for block in blocks:
        copy = comms_pb2.MessageBlock()
        copy.CopyFrom(block)
        if copy.HasField("ask"):
            copy.ask.ask_id = next(ids)
            if copy.ask.status == comms_pb2.ASK_STATUS_UNSPECIFIED:
                copy.ask.status = comms_pb2.ASK_STATUS_PENDING
        result.append(copy)
    return result
