#!/usr/bin/env bash
# Set codeoid up on this machine and start Claude Code with it.
#
#   ./install.sh                 create .venv, install codeoid, register it with Claude Code, start `claude`
#   ./install.sh --no-start      the same without starting Claude Code
#   ./install.sh --no-register   install only (what the test suite uses: it never touches your ~/.claude)
#   ./install.sh --extras test   also install the test tools
#
# Any other arguments are passed to `claude`. CODEOID_VENV chooses another virtual environment.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

venv=${CODEOID_VENV:-.venv}
start=1 register=1 extras=""
claude_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-start) start=0 ;;
    --no-register) register=0; start=0 ;;
    --extras) extras="[$2]"; shift ;;
    *) claude_args+=("$1") ;;
  esac
  shift
done

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "codeoid needs Python 3.11 or newer ($python is $("$python" --version 2>&1))." >&2
  exit 1
fi

# Hooks run by the venv's own interpreter, by absolute path: a version-manager shim (pyenv) in front of
# every hook would triple its start-up time.
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check ".$extras"
echo "codeoid $("$venv/bin/codeoid" --version | awk '{print $NF}') installed in $venv"

[ "$register" = 1 ] || exit 0

if ! command -v claude >/dev/null 2>&1; then
  echo "Claude Code is not installed: npm install -g @anthropic-ai/claude-code@2.1.332" >&2
  exit 1
fi
"$venv/bin/codeoid" install --scope user
"$venv/bin/codeoid" doctor || true

[ "$start" = 1 ] || exit 0
exec claude "${claude_args[@]}"
