"""The compatibility matrix (`scripts/compat`, docs/agents/compatibility.md): every supported
agent's real-agent tests run once against its pinned install (tests/realagent/NAME/, what CI
runs) and once against the latest versions published on npm, one path (native, MCP) at a time.

The latest install mirrors scripts/ensure-npm, which does it: a folder of its own under
`<cache>/compat/NAME-<hash of the versions>/src` holds NAME's package.json with the latest
versions (and `overrides` for the tracked packages other packages pull in), its lock and NAME's
postinstall; `scripts/ensure-npm NAME` installs it with `COMPASS_NPM_SRC` and `COMPASS_NPM_DIR`
pointed there. The tests then find it through `COMPASS_NPM_DIR_<NAME>` (installs.py). The pins
are never changed. The exit status is 1 only when a path fails with the pinned versions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.realagent.installs import ENSURE_NPM, REPO_ROOT, override_variable

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "AGENTS",
    "Agent",
    "AgentPath",
    "Compat",
    "CompatError",
    "Row",
    "main",
    "report",
    "table",
]


@dataclass(frozen=True)
class AgentPath:
    """One way Compass reaches the agent, and the pytest arguments that cover it."""

    label: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Agent:
    """A supported agent: its folder of tests/realagent, the packages whose versions make the
    row (the agent's own first; the others with a short label), the packages whose latest
    version is another's (a platform binary published with its wrapper), what else to show of
    a version (`npm view PKG@V FIELD`), and its paths."""

    name: str
    tracked: tuple[tuple[str, str], ...]
    paths: tuple[AgentPath, ...]
    follows: Mapping[str, str] = field(default_factory=dict[str, str])
    shows: tuple[tuple[str, str, str], ...] = ()


FOLDERS = REPO_ROOT / "tests" / "realagent"
"""Where each agent's pinned folder NAME/ (package.json, lock, postinstall) is."""

_ACP = "tests/realagent/test_acp_agents.py"
_CLIENTS = "tests/mcp/test_clients.py"


def _next_agents(name: str) -> AgentPath:
    """tests/mcp/test_next_agents.py's two tests of agent `name` (by node id: `-k cline` would
    also pick every `decline`)."""
    tests = ("test_the_model_reads_every_answer", "test_the_model_reads_the_decline")
    return AgentPath("MCP", tuple(f"tests/mcp/test_next_agents.py::{t}[{name}]" for t in tests))


AGENTS: tuple[Agent, ...] = (
    Agent(
        "omp",
        (("@oh-my-pi/pi-coding-agent", ""), ("bun", "bun")),
        (
            AgentPath("omp RPC", ("tests/realagent/test_roundtrip.py", "-k", "rpc")),
            AgentPath("ACP", ("tests/realagent/test_roundtrip.py", "-k", "acp")),
        ),
    ),
    Agent(
        "claude",
        (("@agentclientprotocol/claude-agent-acp", ""), ("@anthropic-ai/claude-agent-sdk", "sdk")),
        (
            AgentPath("ACP", (_ACP, "-k", "claude or mode_the_agent_does_not_offer")),
            AgentPath("hooks", ("tests/realagent/test_claude_hooks.py",)),
            AgentPath("MCP", (f"{_CLIENTS}::test_claude_code_reads_the_answer",)),
        ),
        shows=(("@anthropic-ai/claude-agent-sdk", "claudeCodeVersion", "Claude Code"),),
    ),
    Agent(
        "codex",
        (("@agentclientprotocol/codex-acp", ""), ("@openai/codex", "codex")),
        (AgentPath("ACP", (_ACP, "-k", "codex")), AgentPath("MCP", (_CLIENTS, "-k", "codex"))),
    ),
    Agent(
        "gemini",
        (("@google/gemini-cli", ""),),
        (AgentPath("MCP", (f"{_CLIENTS}::test_gemini_cli_reads_the_answer",)),),
    ),
    Agent(
        "qwen",
        (("@qwen-code/qwen-code", ""),),
        (AgentPath("ACP", (_ACP, "-k", "qwen")), _next_agents("qwen")),
    ),
    Agent(
        "opencode",
        (("opencode-ai", ""), ("opencode-linux-x64", "linux-x64")),
        (
            AgentPath("plugin", ("tests/realagent/test_opencode.py",)),
            _next_agents("opencode"),
        ),
        follows={"opencode-linux-x64": "opencode-ai"},
    ),
    Agent(
        "copilot",
        (("@github/copilot", ""),),
        (
            AgentPath("native", ("tests/realagent/test_copilot_native.py",)),
            _next_agents("copilot"),
        ),
    ),
    Agent("cline", (("cline", ""),), (_next_agents("cline"),)),
    Agent(
        "pi",
        (("@mariozechner/pi-coding-agent", ""),),
        (AgentPath("pi RPC", ("tests/realagent/test_roundtrip_pi.py",)),),
    ),
)


@dataclass
class Row:
    """One line of the table: an agent's path with both results ("" when not run)."""

    agent: str
    pinned: str
    latest: str
    path: str
    pinned_result: str = ""
    latest_result: str = ""
    pinned_log: str = ""
    latest_log: str = ""
    note: str = ""
    """Why the latest has no result (npm did not answer, the install failed)."""

    @property
    def pinned_failed(self) -> bool:
        return self.pinned_result != "" and not self.pinned_result.startswith("pass")


class CompatError(Exception):
    """A step that cannot go on (npm cannot answer, an install fails): its reason."""


def _run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 900,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        cwd=cwd,
        env=None if env is None else dict(env),
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Compat:
    """The matrix's steps; `npm` and `pytest` are commands (tests put doubles on PATH)."""

    def __init__(
        self,
        *,
        cache: Path,
        pytest: Sequence[str],
        say: Callable[[str], None],
        folders: Path = FOLDERS,
        timeout: float = 1800,
    ) -> None:
        self.cache = cache
        self.timeout = timeout
        self.folders = folders
        self.pytest = list(pytest)
        self.say = say

    def pinned_versions(self, agent: Agent) -> dict[str, str]:
        """The tracked packages' versions in NAME's lock (a dependency's too, e.g. the SDK)."""
        lock = json.loads((self.folders / agent.name / "package-lock.json").read_text())
        packages = lock.get("packages", {})
        versions: dict[str, str] = {}
        for package, _label in agent.tracked:
            entry = packages.get(f"node_modules/{package}")
            if not isinstance(entry, dict) or "version" not in entry:
                raise CompatError(
                    f"tests/realagent/{agent.name}/package-lock.json has no {package}"
                )
            versions[package] = str(entry["version"])
        return versions

    def npm_view(self, spec: str, what: str = "version") -> str:
        """`npm view SPEC WHAT`'s answer (its last line)."""
        result = _run(["npm", "view", spec, what], timeout=120)
        answer = result.stdout.strip().splitlines()
        if result.returncode != 0 or not answer:
            raise CompatError(f"npm view {spec} {what} failed: {_npm_errors(result.stderr)}")
        return answer[-1].strip().strip("'\"")

    def latest_versions(self, agent: Agent) -> dict[str, str]:
        versions: dict[str, str] = {}
        for package, _label in agent.tracked:
            if package not in agent.follows:
                versions[package] = self.npm_view(package)
        for package, leader in agent.follows.items():
            versions[package] = versions[leader]
        return {package: versions[package] for package, _label in agent.tracked}

    def describe(self, agent: Agent, versions: Mapping[str, str]) -> str:
        """`18.2.3 (bun 1.3.14)`: the agent's version, then the other tracked ones and what
        `shows` names (`Claude Code 2.1.318`)."""
        (main, _), *others = agent.tracked
        extra = [f"{label} {versions[package]}" for package, label in others]
        for package, what, label in agent.shows:
            try:
                extra.append(f"{label} {self.npm_view(f'{package}@{versions[package]}', what)}")
            except CompatError:
                extra.append(f"{label} ?")
        return versions[main] + (f" ({', '.join(extra)})" if extra else "")

    def install_latest(self, agent: Agent, versions: Mapping[str, str]) -> Path:
        """Install `versions` as scripts/ensure-npm installs the pins; returns the install
        directory (reused when it is complete)."""
        digest = hashlib.sha256(json.dumps([agent.name, dict(versions)]).encode()).hexdigest()
        home = self.cache / "compat" / f"{agent.name}-{digest[:12]}"
        src, target = home / "src", home / "install"
        pinned_src = self.folders / agent.name
        if not (src / "package-lock.json").is_file():
            src.mkdir(parents=True, exist_ok=True)
            manifest: dict[str, Any] = json.loads((pinned_src / "package.json").read_text())
            dependencies: dict[str, str] = manifest["dependencies"]
            for package, version in versions.items():
                if package in dependencies:
                    dependencies[package] = version
            # Every tracked package, wherever the tree pulls it in (Codex under codex-acp,
            # the SDK under the Claude adapter), is the latest.
            manifest["overrides"] = dict(versions)
            manifest["description"] = f"scripts/compat: the latest {agent.name} from npm"
            # One line: the postinstalls read a pinned version with one `sed` per line, and a
            # package in both `dependencies` and `overrides` must give them one answer.
            (src / "package.json").write_text(json.dumps(manifest) + "\n")
            locked = _run(
                [
                    "npm",
                    "install",
                    "--package-lock-only",
                    "--ignore-scripts",
                    "--no-audit",
                    "--no-fund",
                ],
                cwd=src,
            )
            if locked.returncode != 0 or not (src / "package-lock.json").is_file():
                raise CompatError(
                    f"npm cannot lock {_specs(versions)}: {_npm_errors(locked.stderr)}"
                )
        if (pinned_src / "postinstall").is_file():
            shutil.copy2(pinned_src / "postinstall", src / "postinstall")
        env = {**os.environ, "COMPASS_NPM_SRC": str(src), "COMPASS_NPM_DIR": str(target)}
        installed = _run([str(ENSURE_NPM), agent.name], env=env)
        if installed.returncode != 0:
            raise CompatError(installed.stderr.strip()[-1500:] or "scripts/ensure-npm failed")
        return target

    def run_path(
        self, agent: Agent, path: AgentPath, kind: str, install: Path | None
    ) -> tuple[str, str]:
        """Run one path's tests (against `install`, else the pins): its result in words and
        its log file."""
        logs = self.cache / "compat" / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        stem = f"{agent.name}-{kind}-{path.label.replace(' ', '-')}"
        junit, log = logs / f"{stem}.xml", logs / f"{stem}.log"
        junit.unlink(missing_ok=True)
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("COMPASS_NPM_DIR_")
        }
        if install is not None:
            env[override_variable(agent.name)] = str(install)
        argv = [*self.pytest, "-p", "no:cacheprovider", "-q", f"--junitxml={junit}", *path.args]
        self.say(f"==> {agent.name} {kind} {path.label}: {shlex.join(path.args)}")
        with log.open("w") as out:
            # A session of its own, so a run that outlives `timeout` ends with every agent and
            # server it started.
            process = subprocess.Popen(
                argv,
                cwd=REPO_ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                code = process.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return f"FAIL (timed out after {self.timeout:g} s)", str(log)
        return _result(code, junit), str(log)

    def rows(self, agents: Sequence[Agent], *, pinned: bool, latest: bool) -> list[Row]:
        rows: list[Row] = []
        for agent in agents:
            rows.extend(self.agent_rows(agent, pinned=pinned, latest=latest))
        return rows

    def agent_rows(self, agent: Agent, *, pinned: bool, latest: bool) -> list[Row]:
        pins = self.pinned_versions(agent)
        note = ""
        try:
            newest: dict[str, str] | None = self.latest_versions(agent)
        except CompatError as error:
            note = str(error)
            newest = None
        rows = [
            Row(
                agent.name,
                self.describe(agent, pins),
                self.describe(agent, newest) if newest else "npm did not answer",
                path.label,
            )
            for path in agent.paths
        ]
        same = newest == pins
        install: Path | None = None
        if latest and newest and not same:
            try:
                self.say(f"==> installing the latest {agent.name}: {rows[0].latest}")
                install = self.install_latest(agent, newest)
            except CompatError as error:
                note = f"the latest cannot be installed: {error}"
                self.say(f"{agent.name}: {note}")
        for path, row in zip(agent.paths, rows, strict=True):
            if pinned or (latest and same):
                row.pinned_result, row.pinned_log = self.run_path(agent, path, "pinned", None)
            if not latest:
                continue
            row.note = note
            if newest is None:
                row.latest_result = "npm did not answer"
            elif same:
                row.latest_result, row.latest_log = "= pinned", row.pinned_log
            elif install is None:
                row.latest_result = "install failed"
            else:
                row.latest_result, row.latest_log = self.run_path(agent, path, "latest", install)
        return rows


def _npm_errors(stderr: str) -> str:
    """npm's error lines, without its pointers to its own log and its general advice."""
    lines = [line.removeprefix("npm error").strip() for line in stderr.splitlines()]
    noise = ("A complete log", "In most cases")
    kept = [line for line in lines if line and not any(n in line for n in noise)]
    return "; ".join(kept)[-800:] or "(npm printed nothing)"


def _specs(versions: Mapping[str, str]) -> str:
    return " ".join(f"{package}@{version}" for package, version in versions.items())


def _result(code: int, junit: Path) -> str:
    """`pass (8)`, `FAIL 2 of 8`, or why there is no count."""
    try:
        suites = ET.parse(junit).getroot()  # noqa: S314 (pytest's own report of this run)
    except (OSError, ET.ParseError):
        return f"FAIL (pytest exited {code}, no report)"
    total = failed = skipped = 0
    for suite in suites.iter("testsuite"):
        total += int(suite.get("tests", "0"))
        failed += int(suite.get("failures", "0")) + int(suite.get("errors", "0"))
        skipped += int(suite.get("skipped", "0"))
    if code == 0 and failed == 0 and total > skipped:
        return f"pass ({total - skipped})"
    if total == 0:
        return f"FAIL (no tests ran; pytest exited {code})"
    return f"FAIL {failed} of {total}"


COLUMNS = ("agent", "pinned", "latest", "path", "pinned result", "latest result")


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table (readable as it is in a terminal)."""
    cells = [COLUMNS] + [
        (r.agent, r.pinned, r.latest, r.path, r.pinned_result or "-", r.latest_result or "-")
        for r in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]

    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)) + " |"

    rule = "| " + " | ".join("-" * w for w in widths) + " |"
    return "\n".join([line(cells[0]), rule, *(line(c) for c in cells[1:])])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scripts/compat",
        description="Run each agent's real-agent tests with its pinned and its latest npm "
        "versions and print the table (docs/agents/compatibility.md). Exits 1 only when a path "
        "fails with the pinned versions.",
    )
    parser.add_argument("--agents", help="comma-separated: " + ",".join(a.name for a in AGENTS))
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--pinned-only", action="store_true", help="run only the pinned installs")
    only.add_argument("--latest-only", action="store_true", help="run only the latest versions")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument(
        "--timeout",
        type=float,
        default=1800,
        help="seconds one path's tests may take before they are stopped as a failure (1800)",
    )
    return parser


def _say(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def report(rows: Sequence[Row]) -> str:
    """The table, then a line per failure or note: what failed, and where its log is."""
    lines = [table(rows)]
    for row in rows:
        for kind, result, log in (
            ("pinned", row.pinned_result, row.pinned_log),
            ("latest", row.latest_result, row.latest_log),
        ):
            if result.startswith("FAIL"):
                lines.append(f"{row.agent} {row.path} {kind}: {result}; log: {log}")
    notes = dict.fromkeys(f"{row.agent}: {row.note}" for row in rows if row.note)
    lines.extend(notes)
    return "\n".join(lines)


def main(
    argv: Sequence[str] | None = None,
    *,
    agents: Sequence[Agent] = AGENTS,
    folders: Path = FOLDERS,
) -> int:
    """`scripts/compat`'s command line (`agents` and `folders`: the supported agents and their
    pinned folders; the unit tests give their own)."""
    args = _parser().parse_args(argv)
    known = {agent.name: agent for agent in agents}
    chosen = list(agents)
    if args.agents:
        names = [name.strip() for name in str(args.agents).split(",") if name.strip()]
        unknown = [name for name in names if name not in known]
        if unknown or not names:
            _say(
                f"scripts/compat: unknown agent(s) {', '.join(unknown)}; known: {', '.join(known)}"
            )
            return 2
        chosen = [known[name] for name in names]
    cache = Path(os.environ.get("COMPASS_NPM_CACHE") or Path.home() / ".cache" / "compass")
    pytest = shlex.split(os.environ.get("COMPASS_COMPAT_PYTEST", "")) or [
        sys.executable,
        "-m",
        "pytest",
    ]
    compat = Compat(cache=cache, pytest=pytest, say=_say, folders=folders, timeout=args.timeout)
    try:
        rows = compat.rows(chosen, pinned=not args.latest_only, latest=not args.pinned_only)
    except CompatError as error:
        _say(f"scripts/compat: {error}")
        return 1
    if args.json:
        sys.stdout.write(json.dumps([vars(row) for row in rows], indent=2) + "\n")
    else:
        sys.stdout.write(report(rows) + "\n")
    return 1 if any(row.pinned_failed for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
