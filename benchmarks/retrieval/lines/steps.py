# ruff: noqa: E501
"""The scripted sessions of the `lines` set (`make_corpus.py` runs them for real against a Flask checkout).

The set measures which lines a recall hit shows, not which episodes it finds: each fact is planted in one long tool
output only (a verbose test run, a config file, a long grep, a server log, a changelog, and commit bodies that the
git-log rule cuts from the compressed view, so they are in the raw output alone), and no prompt or answer repeats
it. A step is a dict: `do` is user / assistant (written by hand), bash (run for real in the checkout; `expect` its
exit code), read (a file's real lines), edit (a real change, reported as Claude Code's structured patch), plant (a
teammate's commit that no session sees) or shell (set-up no session sees). `key` names the episodes the questions
cite.
"""

from __future__ import annotations

from typing import Any

PYTEST = "python -m pytest -p no:cacheprovider"


def user(text: str, key: str | None = None) -> dict[str, Any]:
    return {"do": "user", "text": text, "key": key}


def say(text: str, key: str | None = None) -> dict[str, Any]:
    return {"do": "assistant", "text": text, "key": key}


def bash(command: str, key: str | None = None, expect: int | None = 0) -> dict[str, Any]:
    return {"do": "bash", "command": command, "key": key, "expect": expect}


def read(path: str, key: str | None = None, offset: int | None = None, limit: int | None = None) -> dict[str, Any]:
    return {"do": "read", "path": path, "key": key, "offset": offset, "limit": limit}


def edit(path: str, old: str, new: str, key: str | None = None) -> dict[str, Any]:
    return {"do": "edit", "path": path, "old": old, "new": new, "key": key}


def plant(path: str, old: str, new: str, message: str) -> dict[str, Any]:
    return {"do": "plant", "path": path, "old": old, "new": new, "message": message}


def shell(command: str) -> dict[str, Any]:
    return {"do": "shell", "command": command}


DEBUG_OLD = 'val.lower() not in {"0", "false", "no"}'
DEBUG_BAD = 'val.lower() not in {"0", "false"}'
PARTS_OLD = '"MAX_FORM_PARTS": 1_000,'
PARTS_NEW = '"MAX_FORM_PARTS": 2_000,'

PLANTS = [
    plant("src/flask/app.py", PARTS_OLD, PARTS_NEW,
          "Raise the default form parts limit\n\nThe survey export posts about 1,400 fields in one form, and the old limit of\n"
          "1,000 rejected it with a 413 before our view ever ran. Raise it to 2,000\nuntil the export is split into pages."),
    plant("docs/config.rst", "    preferable.\n\n    Default: ``None``",
          "    preferable.\n\n    Default: ``None`` (leave it unset in production too)",
          "Document leaving the static max age unset\n\nOur production config set it to 43200, and proxies kept serving the old\n"
          "stylesheet for twelve hours after every deploy. Without it the CDN's own\nheaders decide, which is what we want."),
    plant("src/flask/helpers.py", DEBUG_OLD, DEBUG_BAD,
          "Simplify the debug flag parsing\n\nOnly 0 and false switch debug off now; the third spelling was a leftover\n"
          "from a config format nobody uses here."),
]

SESSIONS: list[dict[str, Any]] = [
    {"days_ago": 3, "hour": 9.0, "steps": [  # s01: orientation
        *PLANTS,
        user("I'm picking up our Flask fork for the shop. Start with how the project is set up: packaging, test "
             "settings, linters.", "prompt"),
        read("pyproject.toml", "pyproject"),
        bash("ls -la", "ls"),
        say("It builds with flit_core, tests live under tests/, and ruff, mypy and pyright are configured; tox drives "
            "the matrix of interpreters. uv keeps the lock file.", "explain"),
        user("Which versions of the dependencies are installed in our venv?"),
        bash("python -m pip freeze", "freeze"),
        say("Everything the package needs is installed, in versions that satisfy pyproject's lower bounds."),
        user("Run the whole test suite verbosely so we see every test."),
        bash(f"{PYTEST} -v tests", "verbose_run", expect=1),
        say("One test fails, in the helpers module; everything else passes or is skipped on purpose.", "run_answer"),
        user("Show me the helper that reads the debug environment variable."),
        read("src/flask/helpers.py", "read_helpers", offset=20, limit=40),
        say("It lowercases the variable and compares it against a small set of words that mean off."),
        user("Who touched it recently? Check the history."),
        bash("git log -n 30", "log30"),
        say("The newest commits are Sam's: the debug flag parsing, the static file docs and a larger form limit.",
            "log_answer"),
        user("Put the old behaviour back and rerun the helper tests."),
        edit("src/flask/helpers.py", DEBUG_BAD, DEBUG_OLD, "fix"),
        bash(f"{PYTEST} -q tests/test_helpers.py", "helpers_pass"),
        say("Restored; the helper tests pass again.", "fixed"),
        user("Where in the code is a request's body size checked against the configuration?"),
        bash('grep -rn "config\\[" src tests docs', "grep_config"),
        say("The config is read in a lot of places; the request wrapper and the app both consult it at request time."),
        user("Let's commit the fix."),
        bash("git commit -qam 'Accept no as a false debug value again' && git log -n 1 --format=%s", "commit"),
        say("Committed."),
    ]},
    {"days_ago": 2, "hour": 10.5, "steps": [  # s02: load check, ports, timings, changelog
        shell("mkdir -p scripts && cp {here}/load_check.py scripts/load_check.py"),
        user("Let's run the load check script against the shop app and see how it holds up.", "prompt"),
        bash("python scripts/load_check.py 2>&1", "load_check"),
        say("Nearly every request came back fine; there was one server error in the middle of the run.",
            "load_answer"),
        user("Start the dev server with the shop app on port 5055 so I can click around."),
        bash("flask --app shop run --port 5055", "serve", expect=2),
        say("The server did not start."),
        user("How long does the basic test module take? Show me the slowest tests."),
        bash(f"{PYTEST} -q --durations=8 tests/test_basic.py", "durations"),
        say("The module runs in a second or two; nothing stands out as a problem."),
        user("What changed in the recent releases? Show me the changelog."),
        bash("cat CHANGES.rst", "changes"),
        say("The top section is the unreleased 3.2.0; below it the 3.1.x patch releases and the older history."),
        user("Read the context module for me, I want to understand app contexts."),
        read("src/flask/ctx.py", "read_ctx", offset=1, limit=120),
        say("The context module defines the app context, which now also carries the request; "
            "pushing it binds the proxies."),
        user("And the sessions module?"),
        read("src/flask/sessions.py", "read_sessions", offset=1, limit=200),
        say("Sessions are signed cookies by default; the interface decides how they are opened and saved."),
        user("Look at the longer history of the project with the full messages; I want to know why some build "
             "settings changed over time."),
        bash("git log -n 300 --skip 4", "log300"),
        say("Mostly maintenance: dependency updates, typing fixes, a codespell hook, the redirect status change.",
            "log300_answer"),
    ]},
    {"days_ago": 1, "hour": 14.0, "steps": [  # s03: cookies and the config reference
        user("How are session cookies configured by default?", "prompt"),
        read("src/flask/app.py", "read_defaults", offset=190, limit=60),
        say("The defaults live in Flask.default_config, next to the other settings."),
        user("Find every place that reads the SESSION_COOKIE settings."),
        bash('grep -rn "SESSION_COOKIE" src docs tests', "grep_cookie"),
        say("The session interface reads them when it sets the cookie, and the docs list each one."),
        user("Show me the configuration reference in the docs."),
        read("docs/config.rst", "read_config_docs", offset=1, limit=400),
        say("The reference describes every built-in setting, with its default."),
        user("Run the config and session tests."),
        bash(f"{PYTEST} -q tests/test_config.py tests/test_session_interface.py", "config_tests"),
        say("They pass."),
        user("List the test modules and how big they are."),
        bash("wc -l tests/*.py", "wc_tests"),
        say("test_basic.py is by far the largest module."),
        user("What does the views module look like?"),
        read("src/flask/views.py", "read_views"),
        say("It has View and MethodView; MethodView dispatches on the HTTP method name."),
        user("Search the tests for every use of the test client's get method."),
        bash('grep -rn "client.get(" tests', "grep_client"),
        say("The test client is used everywhere; test_basic.py uses it most."),
    ]},
]
