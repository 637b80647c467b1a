#!/usr/bin/env bash
# Run the whole test suite from scratch: codeoid installed into a venv the way install.sh installs it,
# the pinned Claude Code CLI from npm for the end-to-end tests, then pytest. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

CLAUDE_CODE_VERSION=2.1.332
export CODEOID_VENV=${CODEOID_VENV:-.venv}

./install.sh --no-register --extras test

tools=.tools
if [ "$("$tools/node_modules/.bin/claude" --version 2>/dev/null | awk '{print $1}')" != "$CLAUDE_CODE_VERSION" ]; then
  npm install --prefix "$tools" --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"
fi
export CODEOID_CLAUDE_BIN="$PWD/$tools/node_modules/.bin/claude"
"$CODEOID_CLAUDE_BIN" --version

# The pytest script, not `python -m pytest`: that would put the checkout first on sys.path, and `import codeoid`
# would find the source folder (without hooks/, mcp_server/, compressors/ mapped in) instead of the install.
# pytest exits 5 when it collects no test: that fails this script too, as it should.
exec "$CODEOID_VENV/bin/pytest" "$@"
