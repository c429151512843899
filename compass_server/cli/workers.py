"""`compass serve --workers N`: N server processes on one port, and the process supervising them.

Python runs one thread of Python at a time, so one `compass serve` process uses one core. With
`--workers N` (or COMPASS_WORKERS) the process started by the user becomes a supervisor: it
resolves the database (starting the embedded PostgreSQL when none is configured, which it
alone owns, keeps alive and stops), applies migrations, then starts N workers and announces
the server once every one of them is ready. A worker is `compass serve` itself, started with
two hidden options, on the same settings: its own connection pool, change listener (so a
change made through any worker, or any other process on the database, reaches the watches of
every worker through PostgreSQL), sweeper and webhook worker (which were exactly-once across
processes already: advisory locks and SKIP LOCKED claims in the database).

One port: every worker listens on it with SO_REUSEPORT (Linux), and the kernel spreads new
connections over the workers' listening sockets (a shared accept queue would let whichever
worker wakes first take a whole burst of connections, and a kept-alive connection stays
where it was accepted). The supervisor binds the port first without listening, before the
database starts (cli/listen.py, after checking that nobody listens there), which reserves it
(and picks the port for `--port 0`) for the workers. Only processes of the same user can join
a SO_REUSEPORT group.

The side listeners (COMPASS_METRICS_PORT, COMPASS_GRPC_PORT) run in worker 0 only: the
HTTP/2 listener for gRPC is served by one process, and /metrics describes the process that
answers it (see docs/operating/metrics.md).

Lifetime:
- SIGTERM or SIGINT to the supervisor: it sends SIGTERM to every worker (each ends its live
  watches and shuts down gracefully, as a single server does), waits for them (killing one
  that takes longer than its grace), then stops the embedded PostgreSQL and exits as a single
  server would on that signal. Workers run in their own session, so a Ctrl-C in a terminal
  reaches the supervisor only, which then stops them in order.
- A worker that dies (a crash, the OOM killer, `kill -9`) is logged and replaced by a new
  one at once; more than RESTARTS_ALLOWED replacements within RESTART_WINDOW_SECONDS, or a
  worker that exits before it ever became ready, stop the whole server with an error (exit 1):
  a server that cannot keep its workers up says so instead of limping on.
- A supervisor that dies without stopping them (`kill -9`) leaves its workers' end of a pipe
  at EOF: each worker then shuts down gracefully by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from compass_server import config as config_names
from compass_server.cli import address
from compass_server.cli.errors import CliError
from compass_server.cli.serve import SHUTDOWN_GRACE_SECONDS, announce, serve_one

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

    from compass_server.config import Settings

logger = logging.getLogger("compass.workers")

RESTARTS_ALLOWED: Final = 5
"""Workers replaced within RESTART_WINDOW_SECONDS before the server gives up."""
RESTART_WINDOW_SECONDS: Final = 60.0
READY_TIMEOUT_SECONDS: Final = 120.0
"""How long a worker may take to open its pool and start listening."""
STOP_TIMEOUT_SECONDS: Final = SHUTDOWN_GRACE_SECONDS + 5.0
"""How long stopping workers may take before they are killed (their own grace, plus a bit)."""
_STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


# -- the worker side --------------------------------------------------------------------------


@dataclass
class WorkerLink:
    """What a worker holds of its supervisor: its listening socket, the pipe on which it
    says it is ready, and the pipe whose end-of-file says the supervisor is gone."""

    index: int
    sockets: list[socket.socket]
    ready_fd: int
    parent_fd: int

    def started(self, loop: asyncio.AbstractEventLoop, *, stop: Callable[[], None]) -> None:
        """Tell the supervisor this worker serves; call `stop` once the supervisor is gone."""
        os.write(self.ready_fd, b"1")
        os.close(self.ready_fd)

        def supervisor_gone() -> None:
            loop.remove_reader(self.parent_fd)
            logger.error("worker %d: its supervisor is gone; shutting down", self.index)
            stop()

        # The supervisor never writes: the pipe becomes readable only at end-of-file.
        loop.add_reader(self.parent_fd, supervisor_gone)


def run_worker(index: int, fds: str | None, settings: Settings, host: str, port: int) -> int:
    """One worker: serve on `port` (SO_REUSEPORT) until told to stop (`compass serve
    --worker I --worker-fds READY,PARENT`, started by `supervise`)."""
    if fds is None or settings.database_url is None:
        raise CliError("--worker is started by `compass serve --workers N`, not by hand")
    ready_fd, parent_fd = (int(fd) for fd in fds.split(","))
    link = WorkerLink(
        index=index,
        sockets=[reuse_port_socket(host, port)],
        ready_fd=ready_fd,
        parent_fd=parent_fd,
    )
    serve_one(settings, host, port, worker=link)
    return 0


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port with SO_REUSEPORT (and SO_REUSEADDR), not listening."""
    if not hasattr(socket, "SO_REUSEPORT") or not sys.platform.startswith("linux"):
        raise CliError("--workers above 1 needs Linux (SO_REUSEPORT spreads connections)")
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


# -- the supervisor side ----------------------------------------------------------------------


@dataclass
class _Worker:
    index: int
    process: subprocess.Popen[bytes]
    ready_fd: int
    """Read end of the worker's ready pipe (-1 once it said it is ready)."""
    ready: bool = False


@dataclass
class _Supervisor:
    """Starts, watches and stops the workers (main thread only: it handles signals)."""

    argv: Callable[[int, int, int], list[str]]
    env: dict[str, str]
    count: int
    parent_fd: int
    selector: selectors.DefaultSelector = field(default_factory=selectors.DefaultSelector)
    workers: dict[int, _Worker] = field(default_factory=dict[int, _Worker])
    restarts: deque[float] = field(default_factory=deque[float])
    signalled: int | None = None

    def spawn(self, index: int) -> None:
        ready_r, ready_w = os.pipe()
        try:
            process = subprocess.Popen(  # noqa: S603 - our own command, our own interpreter
                self.argv(index, ready_w, self.parent_fd),
                env=self.env,
                pass_fds=(ready_w, self.parent_fd),
                # Terminal signals (Ctrl-C) reach the supervisor only, which stops the workers
                # in order; a worker outliving its supervisor sees the parent pipe's EOF.
                start_new_session=True,
            )
        finally:
            os.close(ready_w)
        self.workers[index] = _Worker(index=index, process=process, ready_fd=ready_r)
        self.selector.register(ready_r, selectors.EVENT_READ, index)
        logger.info("worker %d started (pid %d)", index, process.pid)

    def wait(self, timeout: float) -> None:
        """Wait up to `timeout` for a worker to become ready, a signal or a child's exit."""
        for key, _ in self.selector.select(timeout):
            index = key.data
            if index is None:  # the wake-up pipe: a signal arrived (handled by its handler)
                with contextlib.suppress(BlockingIOError):
                    os.read(key.fd, 512)
                continue
            self._ready(self.workers[index])

    def _ready(self, worker: _Worker) -> None:
        self.selector.unregister(worker.ready_fd)
        said = os.read(worker.ready_fd, 1)
        os.close(worker.ready_fd)
        worker.ready_fd = -1
        worker.ready = said == b"1"
        if worker.ready:
            logger.info("worker %d ready (pid %d)", worker.index, worker.process.pid)

    def all_ready(self) -> bool:
        return all(w.ready for w in self.workers.values())

    def reap(self) -> None:
        """Replace every worker that died; raise CliError when the server must stop."""
        for worker in list(self.workers.values()):
            code = worker.process.poll()
            if code is None:
                continue
            how = f"signal {-code}" if code < 0 else f"exit code {code}"
            if worker.ready_fd >= 0:
                self.selector.unregister(worker.ready_fd)
                os.close(worker.ready_fd)
            if not worker.ready:
                raise CliError(f"worker {worker.index} stopped ({how}) before it was ready")
            now = time.monotonic()
            while self.restarts and now - self.restarts[0] > RESTART_WINDOW_SECONDS:
                self.restarts.popleft()
            if len(self.restarts) >= RESTARTS_ALLOWED:
                raise CliError(
                    f"worker {worker.index} stopped ({how}) and {RESTARTS_ALLOWED} workers were "
                    f"replaced within {RESTART_WINDOW_SECONDS:.0f} s: stopping the server"
                )
            self.restarts.append(now)
            logger.error(
                "worker %d (pid %d) stopped unexpectedly (%s); starting a new one",
                worker.index,
                worker.process.pid,
                how,
            )
            self.spawn(worker.index)

    def stop(self) -> None:
        """SIGTERM every worker, wait for them (SIGKILL after STOP_TIMEOUT_SECONDS)."""
        running = [w for w in self.workers.values() if w.process.poll() is None]
        for worker in running:
            with contextlib.suppress(ProcessLookupError):
                worker.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        for worker in running:
            try:
                worker.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                logger.error("worker %d did not stop in time; killing it", worker.index)
                worker.process.kill()
                worker.process.wait()
        for worker in self.workers.values():
            if worker.ready_fd >= 0:
                self.selector.unregister(worker.ready_fd)
                os.close(worker.ready_fd)
                worker.ready_fd = -1


@contextlib.contextmanager
def _signals_wake(supervisor: _Supervisor) -> Generator[None]:
    """SIGINT/SIGTERM record themselves on `supervisor`; they and SIGCHLD wake its wait."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    supervisor.selector.register(wake_r, selectors.EVENT_READ, None)

    def on_stop(signum: int, _frame: object) -> None:
        supervisor.signalled = supervisor.signalled or signum

    previous = {s: signal.signal(s, on_stop) for s in _STOP_SIGNALS}
    previous[signal.SIGCHLD] = signal.signal(signal.SIGCHLD, lambda _s, _f: None)
    previous_fd = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        supervisor.selector.unregister(wake_r)
        os.close(wake_r)
        os.close(wake_w)


def supervise(
    settings: Settings, *, reserved: socket.socket, host: str, count: int, demo: bool
) -> int:
    """Run `count` workers on host and the port of `reserved` (a SO_REUSEPORT socket bound
    before the database started, never listening: cli/listen.py) until a signal stops them
    (then re-raise it, as a single server does after its graceful shutdown); the server's exit
    code."""
    if settings.database_url is None:
        raise CliError("supervise needs settings.database_url")
    bound = int(reserved.getsockname()[1])
    parent_r, parent_w = os.pipe()
    # The workers' settings are this process's, on the database it resolved (the embedded
    # one included) and the port it reserved.
    env = {**os.environ, config_names.DATABASE_URL: settings.database_url}

    def argv(index: int, ready_fd: int, parent_fd: int) -> list[str]:
        return [
            *(sys.executable, "-m", "compass_server.cli", "serve"),
            *("--host", host, "--port", str(bound), "--worker", str(index)),
            *("--worker-fds", f"{ready_fd},{parent_fd}"),
        ]

    supervisor = _Supervisor(argv=argv, env=env, count=count, parent_fd=parent_r)
    try:
        with _signals_wake(supervisor):
            try:
                _run(supervisor, settings, host, bound, demo=demo)
            finally:
                supervisor.stop()
                logger.info("all %d workers stopped", count)
    finally:
        os.close(parent_w)
        os.close(parent_r)
        supervisor.selector.close()
    if supervisor.signalled is not None:
        # As uvicorn does after a graceful shutdown: the signal's own meaning now applies
        # (the embedded PostgreSQL's stop_on_signals, KeyboardInterrupt, or the default).
        signal.raise_signal(supervisor.signalled)
    return 0


def _run(supervisor: _Supervisor, settings: Settings, host: str, port: int, *, demo: bool) -> None:
    for index in range(supervisor.count):
        supervisor.spawn(index)
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while not supervisor.all_ready():
        if supervisor.signalled is not None:
            return
        if time.monotonic() >= deadline:
            raise CliError(f"the workers did not start within {READY_TIMEOUT_SECONDS:.0f} s")
        supervisor.wait(min(1.0, deadline - time.monotonic()))
        supervisor.reap()
    logger.info("%d workers ready", supervisor.count)
    dsn = settings.database_url or ""
    asyncio.run(announce(settings, dsn, host, port, demo=demo))
    try:
        while supervisor.signalled is None:
            supervisor.wait(1.0)
            supervisor.reap()
    finally:
        address.forget(dsn)
