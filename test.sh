#!/usr/bin/env bash
# Run the whole test suite from scratch: codeoid installed into a venv the way install.sh installs it, `ruff check`,
# the pinned agent CLIs from npm (Claude Code, Codex, Gemini) for the end-to-end tests, then pytest. Arguments go
# to pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# The agent CLIs the end-to-end tests drive, pinned (fork targets Codex and Gemini too).
PINNED_CLIS=("@anthropic-ai/claude-code@2.1.332" "@openai/codex@0.171.0" "@google/gemini-cli@0.61.0")
export CODEOID_VENV=${CODEOID_VENV:-.venv}

./install.sh --no-register --extras test

# Style first: a lint error fails the run in seconds, before the suite's minutes.
"$CODEOID_VENV/bin/ruff" check .

# The viewer's browser tests drive Debian's Chromium (about two minutes to install, once).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
fi

tools=.tools
installed() {  # the version npm installed of a package under .tools, if any
  node -e "try{console.log(require('./$tools/node_modules/$1/package.json').version)}catch(e){}" 2>/dev/null
}
for pinned in "${PINNED_CLIS[@]}"; do
  if [ "$(installed "${pinned%@*}")" != "${pinned##*@}" ]; then
    npm install --prefix "$tools" --no-audit --no-fund --loglevel=error "${PINNED_CLIS[@]}"
    break
  fi
done
export CODEOID_CLAUDE_BIN="$PWD/$tools/node_modules/.bin/claude"
export CODEOID_CODEX_BIN="$PWD/$tools/node_modules/.bin/codex"
export CODEOID_GEMINI_BIN="$PWD/$tools/node_modules/.bin/gemini"
"$CODEOID_CLAUDE_BIN" --version
"$CODEOID_CODEX_BIN" --version
"$CODEOID_GEMINI_BIN" --version

# The pytest script, not `python -m pytest`: that would put the checkout first on sys.path, and `import codeoid`
# would find the source folder (without hooks/, mcp_server/, compressors/ mapped in) instead of the install.
# pytest exits 5 when it collects no test: that fails this script too, as it should.
exec "$CODEOID_VENV/bin/pytest" "$@"
