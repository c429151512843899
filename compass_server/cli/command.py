"""How the commands' printed hints write `compass`: as this process was started, by its
absolute path, so that a hint runs as printed, from any directory and any shell.

`./scripts/serve` installs `compass` as `.venv/bin/compass` and runs it with `.venv/bin` on
its own PATH only; a newcomer's shell has no `compass`, so a hint saying `compass admin
sign-in-link ...` did not run as printed. The absolute path of the running
`compass` (sys.argv[0]) always does, whether it is `.venv/bin/compass`, a `compass` on PATH,
or `python -m compass_server.cli`. Usage lines (argparse's `prog`) keep the plain name.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path


def compass_command() -> str:
    """This `compass`, as a shell word (or two words: `PYTHON -m compass_server.cli`)."""
    argv0 = sys.argv[0] if sys.argv else ""
    if Path(argv0).name in {"__main__.py", "-c", ""}:  # `python -m compass_server.cli`
        return f"{shlex.quote(sys.executable)} -m compass_server.cli"
    found = argv0 if os.sep in argv0 else shutil.which(argv0)
    if found is None:  # no path to name: its own name is the best guess
        return shlex.quote(argv0)
    return shlex.quote(str(Path(found).absolute()))
