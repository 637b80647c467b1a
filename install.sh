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
# pip's own lines are the progress report: the first install fetches chromadb and onnxruntime (about a minute).
echo "Installing codeoid and its dependencies into $venv with pip (about a minute the first time)..."
"$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar on ".$extras"
echo "codeoid $("$venv/bin/codeoid" --version | awk '{print $NF}') installed in $venv"

[ "$register" = 1 ] || exit 0

if ! command -v claude >/dev/null 2>&1; then
  echo "Claude Code is not installed: npm install -g @anthropic-ai/claude-code@2.1.332" >&2
  exit 1
fi
"$venv/bin/codeoid" install --scope user
"$venv/bin/codeoid" doctor || true

cat <<NEXT

codeoid is registered with Claude Code. Next:
  claude                     start Claude Code as usual: every turn is kept (in a new terminal, if this one runs
                             a script)
  $venv/bin/codeoid run      the same, rotating into a fresh window instead of compacting
  $venv/bin/codeoid gain     what compression kept out of the window; \`codeoid --help\` for the rest
NEXT

[ "$start" = 1 ] || exit 0
# Claude Code's interactive mode needs a terminal; without one (a script, a container, CI) it would fail with
# "Input must be provided...", after an install that worked.
if [ ! -t 0 ] || [ ! -t 1 ]; then
  echo "No terminal here, so Claude Code is not started: run \`claude\` in a terminal."
  exit 0
fi
exec claude "${claude_args[@]}"
