"""A stand-in for `compass opencode ask` in tests/bridge/opencode/test_plugin.py: it records
every line the plugin sends it (one JSON per line, in argv[1]), prints argv[2] (a reply or
rejection line, or nothing for "-"), and on "fail" says argv[3] on stderr and exits 1. It
writes argv[1] + ".done" when its stdin ended or the result came."""

import json
import sys
from pathlib import Path

record, reply = Path(sys.argv[1]), sys.argv[2]
if reply == "fail":
    sys.stdin.readline()
    sys.stderr.write("some detail\n" + sys.argv[3] + "\n")
    raise SystemExit(1)
with record.open("w") as out:
    first = sys.stdin.readline()
    out.write(first)
    out.flush()
    if reply != "-":
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()
    for line in sys.stdin:
        out.write(line)
        out.flush()
        if json.loads(line).get("type") == "compass.result":
            break
Path(str(record) + ".done").write_text("")
