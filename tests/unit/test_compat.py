"""scripts/compat's logic (tests/realagent/compat.py) with a fake `npm` on PATH and a fake
pytest: which versions it compares, how it installs the latest (through scripts/ensure-npm,
the pins untouched), which install each run gets, the table and the exit status. No network."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests._wait import eventually_sync
from tests.realagent import compat, installs
from tests.realagent.compat import Agent, AgentPath, Row

AGENT = Agent(
    "fakeagent",
    (("fake-agent", ""), ("fake-agent-linux", "linux")),
    (AgentPath("native", ("tests/native.py",)), AgentPath("MCP", ("tests/mcp.py", "-k", "fake"))),
    follows={"fake-agent-linux": "fake-agent"},
    shows=(("fake-agent", "engineVersion", "engine"),),
)
PINS = {"fake-agent": "1.0.0", "fake-agent-linux": "1.0.0"}

FAKE_NPM = """\
#!{python}
# npm as scripts/compat and scripts/ensure-npm use it: `view`, `install` (lock only or not),
# `config get registry`, `ping`; every call is logged.
import json, os, pathlib, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(["npm", *args]) + "\\n")
latest = json.loads(os.environ["FAKE_LATEST"])
if args[0] == "view":
    spec, what = args[1], args[2]
    name, _, version = spec.rpartition("@") if spec.rfind("@") > 0 else (spec, "", "")
    if name not in latest:
        sys.stderr.write("npm error 404 Not Found - " + spec + "\\n")
        sys.exit(1)
    print((version or latest[name]) + ("-engine" if what == "engineVersion" else ""))
elif args[0] == "config":
    print("https://registry.example/")
elif args[0] == "install":
    manifest = json.loads(pathlib.Path("package.json").read_text())
    wanted = {{**manifest["dependencies"], **manifest.get("overrides", {{}})}}
    if "--package-lock-only" in args:
        packages = {{"node_modules/" + k: {{"version": v}} for k, v in wanted.items()}}
        pathlib.Path("package-lock.json").write_text(json.dumps({{"packages": packages}}))
    else:
        binary = pathlib.Path("node_modules/.bin/fake-agent")
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_text("#!/bin/sh\\necho " + wanted["fake-agent"] + "\\n")
        binary.chmod(0o755)
"""

FAKE_PYTEST = """\
#!{python}
# pytest as scripts/compat runs it: a junit report of 2 tests, 1 failing when FAKE_FAIL names
# this run's install ("pinned", or "latest" when COMPASS_NPM_DIR_FAKEAGENT is set).
import json, os, pathlib, sys
args = sys.argv[1:]
override = os.environ.get("COMPASS_NPM_DIR_FAKEAGENT")
kind = "latest" if override else "pinned"
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(["pytest", kind, override, *args]) + "\\n")
if override and not (pathlib.Path(override) / "node_modules/.bin/fake-agent").exists():
    sys.exit(3)
if os.environ.get("FAKE_HANG") == kind:
    import subprocess, time
    # A child of its own (an agent the tests started), which must end with the run.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    pathlib.Path(os.environ["FAKE_CHILD"]).write_text(str(child.pid))
    time.sleep(60)
failed = int(os.environ.get("FAKE_FAIL") == kind)
junit = next(a.split("=", 1)[1] for a in args if a.startswith("--junitxml="))
pathlib.Path(junit).write_text(
    '<testsuites><testsuite tests="2" failures="%d" errors="0" skipped="0"/></testsuites>'
    % failed
)
sys.exit(failed)
"""

POSTINSTALL = """\
#!/usr/bin/env bash
# As the real ones do: the version wanted is read from this folder's package.json with sed.
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
want="$(sed -n 's/.*"fake-agent": *"\\([^"]*\\)".*/\\1/p' "$src/package.json")"
got="$(node_modules/.bin/fake-agent)"
[ "$got" = "$want" ] || { echo "fake-agent printed '$got', expected '$want'" >&2; exit 1; }
"""


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pinned folder `fakeagent/`, fake npm and pytest, the cache and the call log."""
    folder = tmp_path / "folders" / "fakeagent"
    folder.mkdir(parents=True)
    (folder / "package.json").write_text(
        json.dumps({"name": "x", "private": True, "dependencies": PINS}, indent=2) + "\n"
    )
    packages = {f"node_modules/{name}": {"version": v} for name, v in PINS.items()}
    (folder / "package-lock.json").write_text(json.dumps({"packages": packages}))
    (folder / "postinstall").write_text(POSTINSTALL)
    (folder / "postinstall").chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("npm", FAKE_NPM), ("pytest", FAKE_PYTEST)):
        (bin_dir / name).write_text(text.format(python=sys.executable))
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("FAKE_LATEST", json.dumps({"fake-agent": "1.1.0"}))
    monkeypatch.setenv("COMPASS_NPM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COMPASS_COMPAT_PYTEST", str(bin_dir / "pytest"))
    monkeypatch.delenv("FAKE_FAIL", raising=False)
    monkeypatch.delenv("FAKE_HANG", raising=False)
    monkeypatch.setenv("FAKE_CHILD", str(tmp_path / "child.pid"))
    return tmp_path


def calls(world: Path) -> list[list[str | None]]:
    log = world / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def run(world: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = compat.main(["--agents", "fakeagent", *argv], agents=[AGENT], folders=world / "folders")
    return code, capsys.readouterr().out


def test_each_path_runs_pinned_then_latest_and_the_table_says_both(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pins_before = (world / "folders/fakeagent/package.json").read_text()
    code, out = run(world, capsys)
    assert code == 0, out
    lines = out.splitlines()
    assert [cell.strip() for cell in lines[0].split("|")[1:-1]] == list(compat.COLUMNS)
    assert [cell.strip() for cell in lines[2].split("|")[1:-1]] == [
        "fakeagent",
        "1.0.0 (linux 1.0.0, engine 1.0.0-engine)",
        "1.1.0 (linux 1.1.0, engine 1.1.0-engine)",
        "native",
        "pass (2)",
        "pass (2)",
    ]
    assert [cell.strip() for cell in lines[3].split("|")[1:-1]][3:] == [
        "MCP",
        "pass (2)",
        "pass (2)",
    ]
    runs = [c for c in calls(world) if c[0] == "pytest"]
    assert [(c[1], c[-1]) for c in runs] == [
        ("pinned", "tests/native.py"),
        ("latest", "tests/native.py"),
        ("pinned", "fake"),
        ("latest", "fake"),
    ]
    assert runs[0][2] is None  # the pinned run: no override
    install = runs[1][2]
    assert install is not None
    assert install.startswith(str(world / "cache" / "compat" / "fakeagent-"))
    # The latest was installed by ensure-npm with install scripts off, its platform package
    # following the wrapper's version, forced wherever the tree pulls it in.
    npm = [c for c in calls(world) if c[0] == "npm" and c[1] == "install"]
    assert "--package-lock-only" in npm[0]
    assert "--ignore-scripts" in npm[1]
    manifest = json.loads(
        (world / "cache/compat" / install.split("/")[-2] / "src/package.json").read_text()
    )
    assert manifest["dependencies"] == {"fake-agent": "1.1.0", "fake-agent-linux": "1.1.0"}
    assert manifest["overrides"] == manifest["dependencies"]
    assert (world / "folders/fakeagent/package.json").read_text() == pins_before


def test_only_a_pinned_failure_fails_the_run(
    world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_FAIL", "latest")
    code, out = run(world, capsys)
    assert code == 0
    assert "| FAIL 1 of 2" in out
    assert "fakeagent native latest: FAIL 1 of 2; log: " in out
    monkeypatch.setenv("FAKE_FAIL", "pinned")
    code, out = run(world, capsys)
    assert code == 1
    assert "fakeagent MCP pinned: FAIL 1 of 2" in out


def test_a_run_past_the_timeout_is_stopped_with_what_it_started(
    world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_HANG", "latest")
    code, out = run(world, capsys, "--latest-only", "--timeout", "2")
    assert code == 0
    assert out.count("| FAIL (timed out after 2 s)") == 2
    child = int((world / "child.pid").read_text())
    # SIGKILL reaches the agent's process on its next scheduling, not before killpg returns.
    eventually_sync(lambda: not _running(child), what="the hung run's child ended", within=10)


def _running(pid: int) -> bool:
    """Whether `pid` runs (an ended child nobody reaped yet is a zombie: `Z`)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_second_run_reuses_the_latest_install(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(world, capsys)
    installs_before = len([c for c in calls(world) if c[:2] == ["npm", "install"]])
    code, _ = run(world, capsys)
    assert code == 0
    assert len([c for c in calls(world) if c[:2] == ["npm", "install"]]) == installs_before


def test_the_same_versions_are_run_once(
    world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LATEST", json.dumps({"fake-agent": "1.0.0"}))
    code, out = run(world, capsys, "--json")
    assert code == 0
    rows = json.loads(out)
    assert [(r["path"], r["pinned_result"], r["latest_result"]) for r in rows] == [
        ("native", "pass (2)", "= pinned"),
        ("MCP", "pass (2)", "= pinned"),
    ]
    assert [c[1] for c in calls(world) if c[0] == "pytest"] == ["pinned", "pinned"]
    assert not [c for c in calls(world) if c[:2] == ["npm", "install"]]


def test_pinned_only_and_latest_only(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(world, capsys, "--pinned-only", "--json")
    assert code == 0
    assert [(r["pinned_result"], r["latest_result"]) for r in json.loads(out)] == [
        ("pass (2)", "")
    ] * 2
    assert not [c for c in calls(world) if c[:2] == ["npm", "install"]]
    (world / "calls.jsonl").unlink()
    code, out = run(world, capsys, "--latest-only", "--json")
    assert code == 0
    assert [(r["pinned_result"], r["latest_result"]) for r in json.loads(out)] == [
        ("", "pass (2)")
    ] * 2
    assert [c[1] for c in calls(world) if c[0] == "pytest"] == ["latest", "latest"]


def test_npm_not_answering_or_not_installing_is_information(
    world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LATEST", json.dumps({}))
    code, out = run(world, capsys)
    assert code == 0
    assert "npm did not answer" in out
    assert "fakeagent: npm view fake-agent version failed: 404 Not Found - fake-agent" in out
    # A latest whose postinstall check fails (the binary is not the version asked for).
    monkeypatch.setenv("FAKE_LATEST", json.dumps({"fake-agent": "2.0.0"}))
    postinstall = world / "folders/fakeagent/postinstall"
    postinstall.write_text(POSTINSTALL.replace('got="$(node_modules/.bin/fake-agent)"', 'got="9"'))
    code, out = run(world, capsys, "--latest-only")
    assert code == 0
    assert "| install failed" in out
    assert "fakeagent: the latest cannot be installed: " in out
    assert "fake-agent printed '9', expected '2.0.0'" in out


def test_an_unknown_agent_is_refused(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert compat.main(["--agents", "nope"], agents=[AGENT], folders=world / "folders") == 2
    assert "unknown agent(s) nope; known: fakeagent" in capsys.readouterr().err


def test_every_supported_agent_has_a_pinned_folder_and_paths() -> None:
    checker = compat.Compat(cache=compat.FOLDERS, pytest=[], say=print)
    for agent in compat.AGENTS:
        versions = checker.pinned_versions(agent)
        assert set(versions) == {package for package, _ in agent.tracked}
        assert agent.paths
        for path in agent.paths:
            assert (compat.REPO_ROOT / path.args[0].split("::")[0]).is_file(), path


def test_the_table_lines_up() -> None:
    rows = [Row("a", "1", "2", "MCP", "pass (1)", "FAIL 1 of 1"), Row("bb", "10", "20", "ACP")]
    lines = compat.table(rows).splitlines()
    assert len({len(line) for line in lines}) == 1
    assert [cell.strip() for cell in lines[3].split("|")[1:-1]] == [
        "bb",
        "10",
        "20",
        "ACP",
        "-",
        "-",
    ]


def test_an_override_is_used_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    installs.ensure_npm.cache_clear()
    monkeypatch.setenv("COMPASS_NPM_DIR_MCP_SDK", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"COMPASS_NPM_DIR_MCP_SDK=.* is not an npm install"):
        installs.ensure_npm("mcp-sdk")
    (tmp_path / "node_modules" / ".bin").mkdir(parents=True)
    installs.ensure_npm.cache_clear()
    assert installs.ensure_npm("mcp-sdk") == tmp_path / "node_modules" / ".bin"
    installs.ensure_npm.cache_clear()
    assert installs.override_variable("omp") == "COMPASS_NPM_DIR_OMP"
