"""The `compass` command line."""

from __future__ import annotations

import argparse
import sys


def _serve(_args: argparse.Namespace) -> int:
    sys.stderr.write("compass serve: the server is not built yet (see the open server issue)\n")
    return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="compass", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the Compass server")
    serve.set_defaults(handler=_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = args.handler
    return int(handler(args))


if __name__ == "__main__":  # pragma: no cover - `python -m compass_server.cli`
    raise SystemExit(main())
