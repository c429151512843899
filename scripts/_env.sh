# Sourced by the other scripts: makes .venv exist and match pyproject.toml, then puts it first
# on PATH. Usage: . scripts/_env.sh EXTRA   (EXTRA: "dev" for the test tool chain, "" for the
# runtime only). Always pass it: sourcing without arguments would see the caller's arguments.
set -euo pipefail
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_extra="${1:-}"
_venv="${COMPASS_VENV:-$_root/.venv}"
_python="${PYTHON:-python3}"
if ! "$_python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "compass needs Python 3.11 or newer (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
if [ ! -x "$_venv/bin/python" ]; then
  "$_python" -m venv "$_venv"
fi
_spec="."
[ -n "$_extra" ] && _spec=".[$_extra]"
_stamp="$_venv/.compass-installed-${_extra:-runtime}"
_want="$(cat "$_root/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$_stamp" ] || [ "$(cat "$_stamp")" != "$_want" ]; then
  echo "==> installing compass${_extra:+ [$_extra]} into $_venv" >&2
  # This machine's pip config names local mirrors that may be absent; their warnings are noise.
  { "$_venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip 2>&1 &&
    "$_venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$_root/$_spec" 2>&1; } |
    { grep -v -E -e "^WARNING: Location 'file:" -e "BuildBackendWarning" \
        -e '^ *(!!)? *$' -e '\*{20}' -e 'Please be careful with folders' \
        -e 'name as your package as they may take' -e 'with strategy, WheelFile' || true; } >&2
  echo "$_want" > "$_stamp"
fi
export PATH="$_venv/bin:$PATH"
export VIRTUAL_ENV="$_venv"
cd "$_root"
