"""The buf gates: lint STANDARD, and a FILE breaking check whose one exemption is load-bearing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "baseline" / "frozen"


def _buf() -> str:
    found = shutil.which("buf") or shutil.which("buf", path=str(Path(sys.executable).parent))
    assert found, "buf not installed (pip install -e .[dev])"
    return found


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_buf(), *args], cwd=cwd, capture_output=True, text=True, check=False)


def _breaking(cwd: Path) -> tuple[int, list[dict[str, object]]]:
    done = _run(cwd, "breaking", "--against", str(BASELINE), "--error-format", "json")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return done.returncode, rows


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A scratch copy of the buf workspace (buf.yaml + proto/) that a test may edit."""
    shutil.copy(ROOT / "buf.yaml", tmp_path / "buf.yaml")
    shutil.copytree(ROOT / "proto", tmp_path / "proto")
    return tmp_path


def _deleted_field(message: str) -> tuple[str, str, str]:
    """(number, name, message) out of buf's FIELD_NO_DELETE text."""
    found = re.search(r'field "(\d+)" with name "(\w+)" on message "(\w+)"', message)
    assert found, message
    number, name, owner = found.groups()
    return number, name, owner


def _drop_exemption(buf_yaml: Path) -> None:
    text = buf_yaml.read_text()
    start = text.index("  ignore_only:")
    buf_yaml.write_text(text[:start])


def test_lint_standard_is_clean() -> None:
    done = _run(ROOT, "lint")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "STANDARD" in (ROOT / "buf.yaml").read_text()


def test_breaking_passes_against_the_frozen_contract() -> None:
    code, rows = _breaking(ROOT)
    assert (code, rows) == (0, [])


def test_breaking_fails_with_field_no_delete_without_the_exemption(workspace: Path) -> None:
    _drop_exemption(workspace / "buf.yaml")
    code, rows = _breaking(workspace)
    assert code != 0
    assert {row["type"] for row in rows} == {"FIELD_NO_DELETE"}
    assert {row["path"] for row in rows} == {"proto/compass/v1/comms.proto"}
    deleted = {_deleted_field(str(row["message"])) for row in rows}
    assert deleted == {
        ("2", "question", "Ask"),
        ("3", "options", "Ask"),
        ("4", "allow_multiple", "Ask"),
        ("5", "chosen_option_ids", "Ask"),
        ("2", "chosen_option_ids", "RespondToAskRequest"),
    }


def test_exemption_is_scoped_to_comms_proto(workspace: Path) -> None:
    # Deleting a field from agent.proto must still break the build, exemption or not.
    agent = workspace / "proto" / "compass" / "v1" / "agent.proto"
    text = agent.read_text()
    edited = text.replace("  string channel_id = 1;\n", "", 1)
    assert edited != text
    agent.write_text(edited)
    code, rows = _breaking(workspace)
    assert code != 0
    assert ("FIELD_NO_DELETE", "proto/compass/v1/agent.proto") in {
        (row["type"], row["path"]) for row in rows
    }


def test_exemption_cites_the_design_record() -> None:
    text = (ROOT / "buf.yaml").read_text()
    comment = text[text.index("ignore_only:") :]
    assert "docs/designs/compass-ask-typed-derivation.md" in comment
    assert (ROOT / "docs" / "designs" / "compass-ask-typed-derivation.md").is_file()
