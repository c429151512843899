"""`python bench/_stdin_tap.py LOG -- COMMAND...` (a script: it runs in the runtime's directory): run COMMAND with this process's stdin passed to
it line by line, noting when each line arrived (time.monotonic(), which on Linux is one clock
for every process of the machine) in LOG, as `<seconds> <the line's first 200 bytes>`.

bench.ask_latency puts it between the agent bridge and the runtime (`agent-bridge ... --
python bench/_stdin_tap.py LOG omp ...`), so the moment the bridge wrote the runtime's reply is
known without touching either: what comes before it is Compass's part of the answer's
latency, what comes after is the runtime's (plus this hop, a pipe write, ~0.1 ms). The
runtime's stdout and stderr are not tapped: they go straight to the bridge; SIGINT, SIGTERM
and SIGHUP are passed on to it.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: _stdin_tap.py LOG -- COMMAND...", file=sys.stderr)
        return 2
    log_path, command = argv[0], argv[2:]
    child = subprocess.Popen(command, stdin=subprocess.PIPE)  # noqa: S603 - the bench's command
    # What would stop this process stops the runtime instead (which then ends it).
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda number, _frame: child.send_signal(number))
    # The lines are passed on by a thread; this one ends with the runtime, whether or not
    # the bridge has closed its end of the pipe yet.
    threading.Thread(target=_pass_on, args=(child, log_path), daemon=True).start()
    return child.wait()


def _pass_on(child: subprocess.Popen[bytes], log_path: str) -> None:
    assert child.stdin is not None
    with open(log_path, "ab", buffering=0) as log:  # noqa: PTH123 - an unbuffered append
        for line in sys.stdin.buffer:
            at = time.monotonic()
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except (BrokenPipeError, ValueError):
                return
            log.write(f"{at:.6f} ".encode() + line[:200].rstrip(b"\n") + b"\n")
    with contextlib.suppress(BrokenPipeError):
        child.stdin.close()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
