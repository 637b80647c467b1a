#!/usr/bin/env bash
# Set codeoid up on this machine and start Claude Code with it.
#
#   ./install.sh                 create .venv, install codeoid, link its commands into ~/.local/bin, register it
#                                with Claude Code (hooks and MCP server in your user settings), start `claude`
#   ./install.sh --no-start      the same without starting Claude Code
#   ./install.sh --plugin        the plugin route instead: install and link as above, then install the codeoid
#                                plugin from this checkout (`claude plugin marketplace add` + `claude plugin install`)
#   ./install.sh --no-register   install into the venv only (what the test suite uses: it touches neither your
#                                ~/.claude nor your ~/.local/bin)
#   ./install.sh --extras test   also install the test tools
#
# Any other arguments are passed to `claude`. CODEOID_VENV chooses another virtual environment, CODEOID_BIN_DIR
# (else XDG_BIN_HOME, else ~/.local/bin) where the commands are linked.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

venv=${CODEOID_VENV:-.venv}
start=1 register=1 route=settings extras=""
claude_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-start) start=0 ;;
    --no-register) register=0; start=0 ;;
    --plugin) route=plugin ;;
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
# --no-compile: pip would byte-compile all ~6,500 modules of the dependencies (half the install time and 120 MB),
# most of which codeoid never imports (chromadb brings the Kubernetes client, gRPC, OpenTelemetry). Importing what
# the hooks, the MCP server, the memory service, the CLI and `chroma run` load compiles just those ~1,000 now, so a
# first session's MCP server starts as fast as a later one's (compiling them at its first start doubled it).
# (-I: isolated, so the checkout's own codeoid/ folder cannot stand in for the installed package.) pip's own lines
# are the progress report.
echo "Installing codeoid and its dependencies into $venv with pip (about 30 s, longer while pip downloads them the first time)..."
"$venv/bin/python" -m pip install --disable-pip-version-check --no-compile --progress-bar on ".$extras"
"$venv/bin/python" -I -c "import codeoid.mcp_server.main, codeoid.hooks.main, codeoid.capture.events, codeoid.cli, \
codeoid.service.daemon, codeoid.service.app, codeoid.memory.embedding, codeoid.memory.vector_index, \
codeoid.memory.retrieval, codeoid.compressors.runner, onnxruntime, tokenizers, numpy, uvicorn, chromadb.cli.cli"
echo "codeoid $("$venv/bin/codeoid" --version | awk '{print $NF}') installed in $venv"

[ "$register" = 1 ] || exit 0

if ! command -v claude >/dev/null 2>&1; then
  echo "Claude Code is not installed: npm install -g @anthropic-ai/claude-code@2.1.332" >&2
  exit 1
fi
if [ "$route" = plugin ]; then
  "$venv/bin/codeoid" install --links-only
  claude plugin marketplace add "$PWD"
  claude plugin install codeoid@codeoid
else
  "$venv/bin/codeoid" install --scope user
fi
"$venv/bin/codeoid" doctor || true

bin_dir=${CODEOID_BIN_DIR:-${XDG_BIN_HOME:-$HOME/.local/bin}}
codeoid=codeoid
case ":$PATH:" in
  *":$bin_dir:"*) ;;
  *) codeoid="$bin_dir/codeoid" ;;
esac
cat <<NEXT

codeoid is set up for Claude Code ($route route). Next:
  claude                     start Claude Code as usual: every turn is kept (in a new terminal, if this one runs
                             a script)
  $codeoid run            the same, rotating into a fresh window instead of compacting
  $codeoid sessions       the sessions codeoid stored; \`$codeoid --help\` for the rest
  $codeoid uninstall      take it all out again (your stored sessions stay unless you add --purge)
NEXT

[ "$start" = 1 ] || exit 0
# Claude Code's interactive mode needs a terminal; without one (a script, a container, CI) it would fail with
# "Input must be provided...", after an install that worked.
if [ ! -t 0 ] || [ ! -t 1 ]; then
  echo "No terminal here, so Claude Code is not started: run \`claude\` in a terminal."
  exit 0
fi
exec claude "${claude_args[@]}"
