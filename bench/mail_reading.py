"""bench.mail_reading: is reading a reply linear in its size, and cheap beside parsing it?

An email reply reaches the reader (`domain/mail_in.reply_text`, then
`domain/email_reply.read_reply`) at up to 1 MiB (the listener refuses more at the SMTP level).
Two inputs that made an earlier reader quadratic are read at a small size and at `--scale`
times that size:

- `html`: an HTML-only reply of stray end tags and deep nesting;
- `lines`: a plain reply of one question's free text over many lines, then a quote.

Printed per input: the cost per KiB at each size and their ratio (1.0x is linear; a quadratic
reader shows about `--scale`x), and the cost of reading against the floor: the standard
library parsing the same bytes into a message and decoding its body (`email.message_from_bytes`
+ `get_content()`), which every reader pays first.

    .venv/bin/python -m bench.mail_reading [--rounds 5] [--kib 1024] [--scale 16]
"""

from __future__ import annotations

import argparse
import email
import email.policy
import sys
from email.message import EmailMessage
from typing import TYPE_CHECKING

from bench._timing import cost_ratio, machine, measure
from compass_server.domain.email_reply import read_reply
from compass_server.domain.mail_in import reply_text
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

HEAD = (
    "From: Ada <ada@example.com>\r\nTo: ask+t@reply.example\r\nSubject: Re: x\r\n"
    "MIME-Version: 1.0\r\nContent-Transfer-Encoding: 8bit\r\n"
)
ASK = comms_pb2.Ask(
    questions=[
        comms_pb2.AskQuestion(question_id=f"q{i}", options=[comms_pb2.AskOption(id="0", label="a")])
        for i in range(3)
    ]
)


def html_reply(kib: int) -> bytes:
    """Stray end tags and deep nesting, about `kib` KiB."""
    unit = "<span>x</div><b><i>y</b>"
    body = unit * (kib * 1024 // len(unit))
    return f"{HEAD}Content-Type: text/html; charset=utf-8\r\n\r\n{body}".encode()


def lines_reply(kib: int) -> bytes:
    """Free text over many lines for question 3, then a quoted original, about `kib` KiB."""
    line = "more words on a line\n"
    count = kib * 1024 // len(line)
    body = "3: words\n" + line * count + "> quoted\n" * (count // 10)
    return f"{HEAD}Content-Type: text/plain; charset=utf-8\r\n\r\n{body}".encode()


def _message(data: bytes) -> EmailMessage:
    message = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    return message


def _read(data: bytes) -> Callable[[], object]:
    return lambda: read_reply(ASK, reply_text(_message(data)))


def _parse(data: bytes) -> Callable[[], object]:
    def parse() -> object:
        body = _message(data).get_body(preferencelist=("plain", "html"))
        assert isinstance(body, EmailMessage)
        return body.get_content()

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mail_reading", description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kib", type=int, default=1024, help="the large input's size")
    parser.add_argument("--scale", type=int, default=16, help="large / small size")
    options = parser.parse_args(argv)
    small_kib = max(1, options.kib // options.scale)
    print(machine())
    for name, build in (("html", html_reply), ("lines", lines_reply)):
        small, large = build(small_kib), build(options.kib)
        rates = measure(
            {
                "read small": _read(small),
                "read large": _read(large),
                "parse large": _parse(large),
            },
            rounds=options.rounds,
            min_block_seconds=0.01,
        )
        per_kib = {
            label: 1000 / (rates[label].median * kib)
            for label, kib in (("read small", small_kib), ("read large", options.kib))
        }
        best, median = cost_ratio(rates["read large"], rates["parse large"])
        print(
            f"{name}: read {per_kib['read small']:.3f} ms/KiB at {small_kib} KiB, "
            f"{per_kib['read large']:.3f} ms/KiB at {options.kib} KiB"
        )
        print(
            f"{name}: ratio cost per KiB large/small: "
            f"{per_kib['read large'] / per_kib['read small']:.2f}x (1.0x is linear)"
        )
        print(
            f"{name}: ratio read / parse ({options.kib} KiB): {best:.2f} best, {median:.2f} median"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
