"""Answer-to-agent latency: from RespondToAsk's OK to the REAL agent runtime holding the answer.

Run from the repository root:

    .venv/bin/python -m bench.ask_latency                    # both transports, 50 asks each
    .venv/bin/python -m bench.ask_latency --protocol acp --asks 50
    .venv/bin/python -m bench.ask_latency --protocol pi --asks 20   # pi's RPC mode
    .venv/bin/python -m bench.ask_latency --protocol all            # omp's two, then pi

Where the database comes from: as in bench/respond.py (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, an admin DSN where a database of its own is created and dropped,
else a temporary local cluster). The runtime is the pinned omp (`@oh-my-pi/pi-coding-agent`,
installed and cached by scripts/ensure-omp, as tests/realagent uses it); target `pi` runs the
pinned pi (`@mariozechner/pi-coding-agent`, scripts/ensure-npm pi) instead, `pi --mode rpc`
with Compass's ask_user extension (tests/realagent/pi_agent.pi_bridge_run), over the
bridge's `--protocol rpc`.

Set-up, once: one `compass serve` subprocess on a fresh database. Per transport: a seeded
world (tests/_server.seed_world: a workspace, a channel, an agent and a human account), a
scripted OpenAI-compatible model (tests/realagent/model_server.py) whose turns 1..N each call
omp's `ask` tool with the runtime's 2-question gallery ask (the `args` of
tests/fixtures/events/gallery-ask-fixture.json; call ids `call_<i>`) and whose turn N+1 is plain
text (pi: its `ask_user` tool, with the same arguments), and ONE `compass agent-bridge
--protocol P --prompt ... -- omp --mode M` process (tests/realagent/harness.bridge_run; pi:
`... --protocol rpc ... -- pi --mode rpc -e ask_user.ts`) running all N asks in one prompt turn: the model's
turn i+1 is its answer to the request that carries the tool result of ask i. `--warmup` more
asks run first, answered the same way and not counted.

The participant is this process: httpx with Connect-JSON, as a browser. It follows the
channel with WatchChannel (a Connect server stream), and for each new ask (once it carries
both questions): opens the floor's watcher (below) and waits for its first state, lets
`--think` seconds pass (default 1: a person reads the question; the bridge, which starts
following the ask right after posting it, is watching by then, as it always is when a
person answers, and the previous step's tail, omp persisting its session and the bridge
posting, has settled), then calls RespondToAsk (db: option "1", features: options "0" and
"1") and takes t0 = time.monotonic() right after the OK arrived.

- agent (the subject): t1 = `RecordedRequest.at` (time.monotonic() in this process, taken
  by the model server's handler thread when the request arrived) of the runtime's next
  chat-completions request, the one carrying ask i's tool result (checked: its tool message
  for `call_<i>` names the chosen option). "The runtime has received the reply" is not
  observable inside omp, so this is an UPPER BOUND on it: besides the server notifying the
  bridge's WatchAsk, the bridge turning the answered Ask into the runtime's reply and writing
  it to omp's stdin, and omp reading it, it includes omp finishing the ask tool call,
  formatting the tool result and sending the next model request over HTTP. Over `rpc` the
  bridge delivers the answer through omp's ask dialogs (a select per question, one round per
  pick of the multi-select), so those round trips are in it too; over `acp` it is one form.
  pi's ask_user asks the same way (a select for db; one select per pick, then "Done", for
  features): four round trips.
- floor (notification floor): a plain WatchAsk client in this process (the bridge's own
  AgentClient.watch_ask, protobuf over Connect on httpx, with the agent's token), opened on
  the same ask before the answer: t = time.monotonic() when it yields the answered state. It
  is what any watcher of the ask pays (commit, NOTIFY, the server re-reading the ask and
  streaming it) and nothing of the bridge or the runtime; it can even come out slightly
  negative when the stream's frame overtakes RespondToAsk's response.

Both sides are measured on every ask, at the same moment (the watcher runs concurrently with
the bridge), so machine noise hits them alike. Reported per transport: p50, p99 and max of
t1 - t0 and of the floor, and the ratios agent/floor at p50 and at p99 (p99 of 50 samples is
interpolated between the two slowest). Every step has a timeout; a transport that does not
get through its asks (the bridge or omp exits, an ask or a model request does not come)
fails with a message and the bridge's log, the other transport still runs, and the exit
code is 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bench._receipts import receipt_delays, receipt_line
from bench._timing import answer_latency_arguments, latency_table, percentile
from bench.respond import ROOT, run_on_database, served_database
from compass_bridge.client import AgentClient, RpcError
from compass_server.transport.connect_protocol import FLAG_END_STREAM, EnvelopeReader, envelope
from tests import _server
from tests.realagent.harness import bridge_run
from tests.realagent.model_server import Turn, ensure_omp
from tests.realagent.pi_agent import pi_bridge_run

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Sequence

    from tests.realagent.harness import Run
    from tests.realagent.model_server import RecordedRequest, ScriptedModelServer

GALLERY_FIXTURE = ROOT / "tests" / "fixtures" / "events" / "gallery-ask-fixture.json"
COMMS = "compass.v1.CommsService"
ANSWERS: list[dict[str, object]] = [
    {"questionId": "db", "chosenOptionIds": ["1"]},
    {"questionId": "features", "chosenOptionIds": ["0", "1"]},
]
CHOSEN_LABEL = "SQLite"
"""Option "1" of the db question: the tool result the model receives must name it."""
COMMANDS = {
    "acp": "compass agent-bridge --protocol acp -- omp --mode acp",
    "rpc": "compass agent-bridge --protocol rpc -- omp --mode rpc-ui",
    "pi": "compass agent-bridge --protocol rpc -- pi --mode rpc -e ask_user.ts",
}
"""The bench's targets: omp over each transport, and pi."""
RUNTIMES = {"acp": "omp", "rpc": "omp", "pi": "pi"}
COMPASS_ABOVE_FLOOR_MS = 5.0

STARTUP_TIMEOUT = 120.0
"""From starting the bridge to the first ask in the channel (omp starts, the model answers)."""
STEP_TIMEOUT = 30.0
"""Any single step after that: the next ask, a watcher's state, the next model request."""
EXIT_TIMEOUT = 30.0


class BenchError(Exception):
    """The transport did not get through its asks; the message says where."""


@dataclass(frozen=True, slots=True)
class Sample:
    agent: float
    """t1 - t0: the runtime's next model request arrived, seconds after RespondToAsk's OK."""
    floor: float
    """The plain WatchAsk watcher saw the answered state, seconds after RespondToAsk's OK."""
    compass: float
    """tw - t0: the bridge wrote the runtime's reply (its first line of it), seconds after
    RespondToAsk's OK: Compass's part (the server, the bridge); below 0 when the reply
    overtook RespondToAsk's response, as the floor's can."""

    @property
    def runtime(self) -> float:
        """t1 - tw: the runtime's part (reading the reply, finishing the tool call, formatting
        the result, the next model request), plus the tap's pipe hop."""
        return self.agent - self.compass


async def tapped(tap_log: Path, after: float, marker: bytes) -> float | None:
    """`reply_written`, waiting up to TAP_SECONDS for the line: the tap notes a line just
    after passing it on, so the runtime may already have acted on it."""
    deadline = time.monotonic() + TAP_SECONDS
    while (found := reply_written(tap_log, after, marker)) is None:
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.01)
    return found


TAP_SECONDS = 2.0
REPLY_MARKERS = {
    "acp": b'"result"',
    "rpc": b'"extension_ui_response"',
    "pi": b'"extension_ui_response"',
}
"""What the bridge's reply to the runtime's ask looks like: a JSON-RPC result (the form's
answer) over ACP, an extension_ui_response (a dialog's answer) over the RPC modes."""


def reply_written(tap_log: Path, after: float, marker: bytes) -> float | None:
    """When the bridge wrote its first reply line to the runtime after `after` (the tap's
    time.monotonic(); the bench passes the moment it sent RespondToAsk: like the floor's
    stream, the bridge may have written the reply before RespondToAsk's response arrived),
    or None if it has not."""
    try:
        lines = tap_log.read_bytes().splitlines()
    except OSError:
        return None
    for line in lines:
        stamp, _, text = line.partition(b" ")
        at = float(stamp)
        if at >= after and marker in text:
            return at
    return None


# -- Connect-JSON as a browser speaks it --------------------------------------------------------


def _headers(token: str, content_type: str) -> dict[str, str]:
    return {
        "content-type": content_type,
        "authorization": f"Bearer {token}",
        "connect-protocol-version": "1",
    }


async def respond_to_ask(http: httpx.AsyncClient, token: str, ask_id: str) -> None:
    body = json.dumps({"askId": ask_id, "answers": ANSWERS}, separators=(",", ":"))
    try:
        response = await http.post(
            f"/{COMMS}/RespondToAsk",
            content=body.encode(),
            headers=_headers(token, "application/json"),
        )
    except httpx.HTTPError as exc:
        raise BenchError(f"RespondToAsk {ask_id}: {exc!r}") from exc
    if response.status_code != 200:
        raise BenchError(f"RespondToAsk {ask_id}: {response.status_code} {response.text[:300]}")


async def watch_channel(
    http: httpx.AsyncClient, token: str, channel_id: str
) -> AsyncGenerator[dict[str, Any]]:
    """WatchChannel's responses (decoded JSON) from the start of the channel."""
    payload = json.dumps({"channelId": channel_id}).encode()
    request = http.build_request(
        "POST",
        f"/{COMMS}/WatchChannel",
        content=envelope(payload),
        headers=_headers(token, "application/connect+json"),
        timeout=httpx.Timeout(connect=5.0, read=90.0, write=10.0, pool=5.0),
    )
    response = await http.send(request, stream=True)
    try:
        if response.status_code != 200:
            await response.aread()
            raise BenchError(f"WatchChannel: {response.status_code} {response.text[:300]}")
        reader = EnvelopeReader()
        async for chunk in response.aiter_raw():
            for frame in reader.feed(chunk):
                doc: dict[str, Any] = json.loads(frame.payload or b"{}")
                if frame.flags & FLAG_END_STREAM:
                    raise BenchError(f"WatchChannel ended: {doc}")
                yield doc
        raise BenchError("WatchChannel: the stream ended without an end frame")
    finally:
        await response.aclose()


def complete_asks(message: dict[str, Any]) -> list[str]:
    """Ids of the message's unanswered asks that carry both questions of the gallery ask."""
    found: list[str] = []
    for block in message.get("blocks", []):
        ask = block.get("ask")
        if not ask or ask.get("answeredByAccountId"):
            continue
        questions = {q.get("questionId"): q for q in ask.get("questions", [])}
        if (
            set(questions) == {"db", "features"}
            and len(questions["db"].get("options", [])) == 3
            and len(questions["features"].get("options", [])) == 4
        ):
            found.append(str(ask["askId"]))
    return found


async def follow_asks(
    http: httpx.AsyncClient, token: str, channel_id: str, out: asyncio.Queue[str]
) -> None:
    """Put every new complete ask of the channel on `out`, in the order they appear."""
    seen: set[str] = set()
    try:
        async for response in watch_channel(http, token, channel_id):
            for ask_id in complete_asks(response.get("message") or {}):
                if ask_id not in seen:
                    seen.add(ask_id)
                    out.put_nowait(ask_id)
    except httpx.HTTPError as exc:
        raise BenchError(f"WatchChannel failed: {exc!r}") from exc


async def next_ask(asks: asyncio.Queue[str], following: asyncio.Task[None]) -> str:
    """The next new ask, or the error that ended `following`."""
    get = asyncio.ensure_future(asks.get())
    try:
        await asyncio.wait({get, following}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not get.done():
            get.cancel()
    if get.done() and not get.cancelled():
        return get.result()
    following.result()
    raise BenchError("WatchChannel ended")


# -- the floor: a plain WatchAsk client ----------------------------------------------------------


class FloorWatcher:
    """WatchAsk on one ask: `ready` once its first state arrived; `answered_at` once it
    yielded the answered state (time.monotonic())."""

    def __init__(self, agent: AgentClient, ask_id: str) -> None:
        self.ready = asyncio.Event()
        self.answered_at: float | None = None
        self.task = asyncio.create_task(self._watch(agent, ask_id), name=f"floor-{ask_id}")

    async def started(self) -> None:
        """Return once the first (unanswered) state arrived; raise the watcher's error."""
        ready = asyncio.ensure_future(self.ready.wait())
        try:
            await asyncio.wait({ready, self.task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if not self.ready.is_set():
            self.task.result()
            raise BenchError("WatchAsk's first state was already answered")

    async def _watch(self, agent: AgentClient, ask_id: str) -> None:
        try:
            async with contextlib.aclosing(agent.watch_ask(ask_id)) as states:
                async for ask in states:
                    if ask.answered_by_account_id or ask.HasField("answered_at"):
                        self.answered_at = time.monotonic()
                        return
                    self.ready.set()
        except RpcError as exc:
            raise BenchError(f"the floor's WatchAsk {ask_id} failed: {exc}") from exc
        raise BenchError(f"WatchAsk {ask_id} ended before the answer")


# -- one transport -------------------------------------------------------------------------------


def script(gallery: dict[str, Any], asks: int, tool: str = "ask") -> list[Turn]:
    calls = [Turn.call(tool, gallery, f"call_{i}") for i in range(asks)]
    return [*calls, Turn.say("All set, thanks.")]


def check_bridge(run: Run) -> None:
    if run.process.poll() is not None:
        raise BenchError(f"the bridge exited with {run.process.returncode}")


async def within(awaitable: Any, seconds: float, what: str, run: Run) -> Any:
    """`awaitable`'s result; BenchError when it takes longer than `seconds` or the bridge
    exits first (checked every 0.5 s)."""
    task = asyncio.ensure_future(awaitable)
    deadline = time.monotonic() + seconds
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=min(0.5, deadline - time.monotonic()))
            if done:
                return task.result()
            check_bridge(run)
            if time.monotonic() >= deadline:
                raise BenchError(f"timed out after {seconds:g}s waiting for {what}")
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def model_request(model: ScriptedModelServer, index: int, run: Run) -> RecordedRequest:
    """The model's chat-completions request number `index` (0-based), once it arrived."""
    deadline = time.monotonic() + STEP_TIMEOUT
    while True:
        try:
            found = await asyncio.to_thread(model.wait_for_completions, index + 1, 0.5)
            return found[index]
        except TimeoutError:
            check_bridge(run)
            if time.monotonic() >= deadline:
                raise BenchError(
                    f"timed out after {STEP_TIMEOUT:g}s waiting for model request {index + 1}"
                ) from None


def tool_result(request: RecordedRequest, call_id: str) -> str:
    """The text of the request's LAST tool message, which must answer `call_id`."""
    tools = request.tool_messages()
    if not tools or tools[-1].get("tool_call_id") != call_id:
        last = tools[-1].get("tool_call_id") if tools else None
        raise BenchError(f"the model request does not end with {call_id}'s result (got {last})")
    return request.tool_result_text(call_id)


async def stop_bridge(run: Run) -> None:
    """SIGINT (the bridge cancels the prompt and stops omp), bounded; bridge_run kills it
    should it still be running."""
    if run.process.poll() is None:
        run.process.send_signal(signal.SIGINT)
        with contextlib.suppress(AssertionError):
            await run.wait(EXIT_TIMEOUT)


async def measure_transport(
    protocol: str,
    *,
    server_url: str,
    dsn: str,
    gallery: dict[str, Any],
    omp_bin: Path,
    asks: int,
    warmup: int,
    think: float,
) -> tuple[list[Sample], list[float]]:
    """The samples, and answer -> delivery receipt stored for every answered ask."""
    world = await _server.seed_world(dsn, prefix=f"{protocol}-")
    total = warmup + asks
    samples: list[Sample] = []
    with tempfile.TemporaryDirectory(prefix=f"compass-ask-latency-{protocol}-") as tmp:
        tap_log = Path(tmp) / "stdin-tap.log"
        tap = (sys.executable, str(ROOT / "bench" / "_stdin_tap.py"), str(tap_log), "--")
        bridged = (
            pi_bridge_run(
                tmp_path=Path(tmp),
                server_url=server_url,
                world=world,
                turns=script(gallery, total, "ask_user"),
                runtime_prefix=tap,
            )
            if protocol == "pi"
            else bridge_run(
                omp_bin=omp_bin,
                tmp_path=Path(tmp),
                server_url=server_url,
                world=world,
                protocol=protocol,
                turns=script(gallery, total),
                runtime_prefix=tap,
            )
        )
        with bridged as run:
            await drive(run, protocol, server_url, world, total, warmup, think, tap_log, samples)
    return samples, await receipt_delays(dsn, channel_id=world.channel_id)


async def drive(
    run: Run,
    protocol: str,
    server_url: str,
    world: _server.SeededWorld,
    total: int,
    warmup: int,
    think: float,
    tap_log: Path,
    samples: list[Sample],
) -> None:
    """Answer every ask of the run's prompt turn, measuring each (see the module docstring)."""
    try:
        async with httpx.AsyncClient(base_url=server_url, timeout=STEP_TIMEOUT) as comms:
            agent = AgentClient(server_url, world.agent.token)
            new_asks: asyncio.Queue[str] = asyncio.Queue()
            following = asyncio.create_task(
                follow_asks(comms, world.human.token, world.channel_id, new_asks)
            )
            try:
                for i in range(total):
                    ask_id = await within(
                        next_ask(new_asks, following),
                        STARTUP_TIMEOUT if i == 0 else STEP_TIMEOUT,
                        f"ask {i + 1} of {total} in the channel",
                        run,
                    )
                    floor = FloorWatcher(agent, ask_id)
                    try:
                        await within(floor.started(), STEP_TIMEOUT, "WatchAsk", run)
                        await asyncio.sleep(think)
                        asked = time.monotonic()  # no reply to the runtime can precede this
                        await respond_to_ask(comms, world.human.token, ask_id)
                        t0 = time.monotonic()
                        request = await model_request(run.model, i + 1, run)
                        await within(floor.task, STEP_TIMEOUT, "the floor's watcher", run)
                    finally:
                        floor.task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await floor.task
                    result = tool_result(request, f"call_{i}")
                    if CHOSEN_LABEL not in result:
                        raise BenchError(f"ask {i + 1}: the model got {result!r}")
                    assert floor.answered_at is not None
                    written = await tapped(tap_log, asked, REPLY_MARKERS[protocol])
                    if written is None or written > request.at:
                        raise BenchError(f"ask {i + 1}: no reply to the runtime in the tap")
                    if i >= warmup:
                        samples.append(
                            Sample(request.at - t0, floor.answered_at - t0, written - t0)
                        )
            finally:
                following.cancel()
                with contextlib.suppress(asyncio.CancelledError, BenchError, httpx.HTTPError):
                    await following
        if len(run.model.completions) != total + 1:
            raise BenchError(f"{len(run.model.completions)} model requests, expected {total + 1}")
        if protocol == "acp":  # the prompt turn ended: the ACP bridge exits on its own
            try:
                code = await run.wait(EXIT_TIMEOUT)
            except AssertionError:
                raise BenchError("the bridge did not exit after the prompt turn") from None
            if code != 0:
                raise BenchError(f"the bridge exited with {code}")
    except BaseException as exc:
        await stop_bridge(run)
        if isinstance(exc, BenchError):
            raise BenchError(f"{exc}\n--- bridge log (tail) ---\n{tail(run.log())}") from exc
        raise
    await stop_bridge(run)  # rpc: omp waits for the next prompt until it is stopped


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


# -- report --------------------------------------------------------------------------------------


def report(protocol: str, samples: Sequence[Sample]) -> str:
    title = f"{protocol}: {COMMANDS[protocol]} ({len(samples)} asks)"
    runtime = RUNTIMES[protocol]
    compass = [s.compass for s in samples]
    floor = [s.floor for s in samples]
    table = latency_table(
        ("agent (model got the result)", [s.agent for s in samples]),
        ("floor (WatchAsk client)", floor),
        ratio="agent / floor",
        parts=[
            (f"  Compass (reply written to {runtime})", compass),
            ("  runtime (reply -> model request)", [s.runtime for s in samples]),
        ],
    )
    above = [(percentile(compass, q) - percentile(floor, q)) * 1e3 for q in (0.5, 0.99)]
    line = (
        f"  Compass's part above the floor: p50 {above[0]:.2f} ms, p99 {above[1]:.2f} ms "
        f"(target: p99 <= {COMPASS_ABOVE_FLOOR_MS:g} ms)"
    )
    return "\n".join([title, *table, line])


# -- main ----------------------------------------------------------------------------------------


async def run_all(args: argparse.Namespace, admin: str, where: str) -> int:
    protocols = {"both": ["acp", "rpc"], "all": ["acp", "rpc", "pi"]}.get(
        args.protocol, [args.protocol]
    )
    gallery: dict[str, Any] = json.loads(GALLERY_FIXTURE.read_text(encoding="utf-8"))["args"]
    omp_bin = await asyncio.to_thread(ensure_omp)
    failed: list[str] = []
    async with served_database(admin) as (server, dsn, settings):
        print(f"database: {where}; {settings}")
        print(
            f"answer-to-agent latency: RespondToAsk OK -> the runtime's next model request "
            f"(upper bound); {args.asks} asks per transport (+{args.warmup} warm-up), "
            f"think {args.think:g} s"
        )
        for protocol in protocols:
            try:
                samples, receipts = await measure_transport(
                    protocol,
                    server_url=server.url,
                    dsn=dsn,
                    gallery=gallery,
                    omp_bin=omp_bin,
                    asks=args.asks,
                    warmup=args.warmup,
                    think=args.think,
                )
            except BenchError as exc:
                failed.append(protocol)
                print(f"{protocol}: FAILED: the asks did not complete over {protocol}: {exc}")
                continue
            print(report(protocol, samples), flush=True)
            print(receipt_line(receipts, len(samples) + args.warmup), flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.ask_latency", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument(
        "--protocol",
        choices=["acp", "rpc", "pi", "both", "all"],
        default="both",
        help="omp over acp or rpc, pi (over rpc), both (omp's), all (default both)",
    )
    args = answer_latency_arguments(
        parser, argv, asks=50, warmup=2, think=1.0, per=" per transport"
    )
    # SIGTERM ends the run like Ctrl-C: every child is stopped.
    return run_on_database(functools.partial(run_all, args))


if __name__ == "__main__":
    raise SystemExit(main())
