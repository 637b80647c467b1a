# ruff: noqa: E501
"""The scripted sessions of the held-out coding history (`make_corpus.py` runs them for real against sqlparse).

A step is a dict: `do` is user / assistant (text written by hand), bash (run for real; `expect` the exit code),
read (a file's real lines), edit (a real change, reported as Claude Code's structured patch), plant (a
teammate's commit that no session sees: the bug a later session finds) or shell (set-up no session sees).
`key` names the episodes the questions cite.
"""

from __future__ import annotations

from typing import Any

PYTEST = "python3 -m pytest -p no:cacheprovider -q"


def user(text: str, key: str | None = None) -> dict[str, Any]:
    return {"do": "user", "text": text, "key": key}


def say(text: str, key: str | None = None) -> dict[str, Any]:
    return {"do": "assistant", "text": text, "key": key}


def bash(command: str, key: str | None = None, expect: int | None = 0, description: str = "") -> dict[str, Any]:
    return {"do": "bash", "command": command, "key": key, "expect": expect, "description": description}


def read(path: str, key: str | None = None, offset: int | None = None, limit: int | None = None) -> dict[str, Any]:
    return {"do": "read", "path": path, "key": key, "offset": offset, "limit": limit}


def edit(path: str, old: str, new: str, key: str | None = None) -> dict[str, Any]:
    return {"do": "edit", "path": path, "old": old, "new": new, "key": key}


def plant(path: str, old: str, new: str, message: str) -> dict[str, Any]:
    return {"do": "plant", "path": path, "old": old, "new": new, "message": message}


NEWLINES_OLD = "        elif LINE_MATCH.match(line):\n            outputlines.append('')"
NEWLINES_BAD = "        elif LINE_MATCH.match(line):\n            continue"
CTE_OLD = ("                    if token is not None \\\n                            and token.ttype == T.Keyword.DML:\n"
           "                        return token.normalized")
CTE_BAD = CTE_OLD.replace("T.Keyword.DML:", "T.Keyword.DDL:")
HINT_OLD = "            if token.ttype in sql_hints:\n                is_sql_hint = True"
HINT_BAD = "            if token.ttype in sql_hints:\n                is_sql_hint = False"
PYVAR_OLD = "            varname = f'{self.varname}{self.count}'"
PYVAR_BAD = "            varname = f'{self.varname}_{self.count}'"
WRAP_OLD = "    if wrap_after < 0:"
WRAP_BAD = "    if wrap_after < 1:"
QUOTES_OLD = "    if val[0] in ('\"', \"'\", '`') and val[0] == val[-1]:"
QUOTES_BAD = "    if val[0] in ('\"', \"'\", '`'):"

SESSIONS: list[dict[str, Any]] = [
    {"days_ago": 10, "hour": 9.5, "steps": [  # s01: orientation
        user("I'm new to this codebase. Walk me through what happens when someone calls sqlparse.format on a string,"
             " from the entry point down to the filters.", "prompt"),
        bash("ls sqlparse sqlparse/engine sqlparse/filters", "ls"),
        read("sqlparse/__init__.py", "read_init"),
        bash("grep -n 'def build_filter_stack' -A40 sqlparse/formatter.py", "grep_stack"),
        read("sqlparse/engine/filter_stack.py", "read_stack"),
        say("Here is the path a call takes:\n\n1. `sqlparse.format(sql, **options)` in `sqlparse/__init__.py` builds a"
            " `FilterStack`, validates the options with `formatter.validate_options`, and hands the stack to"
            " `formatter.build_filter_stack`.\n2. `build_filter_stack` adds filters in three stages: token-level"
            " preprocess filters (keyword and identifier case, string truncation), statement-level filters"
            " (stripping comments and whitespace, reindenting, aligning) and postprocess filters (the serializer"
            " and the Python or PHP output formats).\n3. `FilterStack.run` lexes the text into a token stream,"
            " splits it into statements with `StatementSplitter`, groups each statement's tokens into a tree"
            " (`grouping.group`) only when a statement filter needs it, and then runs the filters in order.\n\n"
            "So formatting is lexing, splitting, optional grouping, then filters; nothing is parsed into a full"
            " AST.", "explain"),
        user("Does the test suite pass as it stands, and how long does it take?", "prompt2"),
        bash(f"{PYTEST} tests", "suite"),
        say("Yes: the whole suite passes on a clean checkout (the summary line is at the bottom of the output, with"
            " two expected failures marked xfail). It takes well under a minute here, so running all of it before a"
            " commit is cheap.", "suite_answer"),
        user("What has been happening in the repo lately?"),
        bash("git log --oneline -12", "log"),
        say("The recent history is release housekeeping: a publish of fixes, a version bump, changelog"
            " alignment, and a shared harness for the benchmark scripts. Nothing is in flight on the main branch.",
            "log_answer"),
        user("Where are the keywords defined, and how does the lexer pick them?"),
        bash("grep -n 'def is_keyword\\|KEYWORDS_COMMON = ' -r sqlparse", "grep_keywords"),
        read("sqlparse/lexer.py", "read_lexer", offset=1, limit=60),
        say("Keywords live in sqlparse/keywords.py as dictionaries from upper-cased words to token types"
            " (KEYWORDS_COMMON, KEYWORDS, and dialect-specific ones); the regex list SQL_REGEX there decides what a"
            " token looks like. The lexer in sqlparse/lexer.py runs those regexes in order and, for a word,"
            " asks is_keyword which dictionary holds it.", "keywords_answer"),
    ]},
    {"days_ago": 10, "hour": 14.0, "steps": [  # s02: newlines bug, fixed and committed
        plant("sqlparse/utils.py", NEWLINES_OLD, NEWLINES_BAD, "Tidy the newline splitting loop"),
        user("Something is off with multi-line statements: when I split a script with line breaks, the lines come"
             " back glued together into one. Can you find out why?", "prompt"),
        bash(f"{PYTEST} tests/test_format.py tests/test_cli.py", "fail", expect=1),
        bash("grep -rn 'LINE_MATCH' sqlparse", "grep"),
        read("sqlparse/utils.py", "read", offset=1, limit=60),
        bash("git log --oneline -3 -- sqlparse/utils.py", "log"),
        say("Found it. In `split_unquoted_newlines` the loop walks the pieces between line breaks. When a piece IS a"
            " line break (`LINE_MATCH` matches it), the function must start a new output line by appending an"
            " empty string. The latest commit to utils.py (\"Tidy the newline splitting loop\") replaced that"
            " append with `continue`, so the break is skipped and the next piece is added to the same line. That"
            " is why every line after the first is glued onto it.", "explain"),
        edit("sqlparse/utils.py", NEWLINES_BAD, NEWLINES_OLD, "edit"),
        bash(f"{PYTEST} tests/test_format.py tests/test_cli.py", "pass"),
        bash("git commit -am 'Restore line breaks in split_unquoted_newlines'", "commit"),
        say("Fixed and committed: the line-break branch appends a new line again, and the utils and split tests"
            " pass.", "done"),
    ]},
    {"days_ago": 9, "hour": 10.0, "steps": [  # s03: CTE type bug, fixed, not committed
        plant("sqlparse/sql.py", CTE_OLD, CTE_BAD, "Handle DDL after CTE definitions"),
        user("A user reported that statements starting with WITH ... SELECT are reported as UNKNOWN by get_type."
             " Please investigate.", "prompt"),
        bash("python3 -c \"import sqlparse; print(sqlparse.parse('WITH x AS (SELECT 1) SELECT * FROM x')[0]"
             ".get_type())\"", "repro"),
        bash(f"{PYTEST} tests/test_regressions.py tests/test_parse.py", "fail", expect=1),
        bash("grep -n 'Keyword.CTE' -r sqlparse", "grep"),
        read("sqlparse/sql.py", "read", offset=410, limit=50),
        say("The root cause is in `Statement.get_type`. For a statement that starts with the CTE keyword it skips the"
            " identifier list of definitions and then checks the next token. That check compares against"
            " `T.Keyword.DDL`, but the statement after a CTE is a DML statement (SELECT, INSERT, UPDATE), so the"
            " check never passes and the method falls through to the final `return 'UNKNOWN'`. Comparing with"
            " `T.Keyword.DML` restores the right answer.", "explain"),
        edit("sqlparse/sql.py", CTE_BAD, CTE_OLD, "edit"),
        bash(f"{PYTEST} tests/test_regressions.py tests/test_parse.py", "pass"),
        user("Good. Don't commit it yet, I want to look at it with fresh eyes tomorrow.", "hold"),
        say("Understood: the fix is in the working tree only, nothing committed. `git diff` shows the one-line"
            " change in sqlparse/sql.py.", "held"),
    ]},
    {"days_ago": 8, "hour": 9.0, "steps": [  # s04: review of yesterday's change, decision, commit
        user("Let's review the change we left uncommitted yesterday before committing it.", "prompt"),
        bash("git status --short", "status"),
        bash("git diff", "diff"),
        read("sqlparse/sql.py", "read", offset=414, limit=40),
        say("Review notes:\n- The diff is one line: the token after the CTE definitions must be DML, which is what"
            " the docstring promises.\n- A WITH followed by DDL (`WITH ... CREATE`) is not valid in the dialects"
            " sqlparse targets, so returning UNKNOWN for it is fine.\n- The regression tests already cover WITH ..."
            " SELECT and WITH ... INSERT.\nI see no risk; it is ready to commit.", "review"),
        user("Should we also accept DDL there, to be lenient?"),
        say("I'd rather not. Accepting DDL after a CTE would report a type for statements no database runs, and a"
            " caller that routes statements by type would be misled. Decision: keep DML only, and mention the"
            " reason in the commit message.", "decision"),
        bash("git commit -am 'Report the DML type of statements that start with a CTE' -m 'A CTE is followed by"
             " DML; DDL after WITH stays UNKNOWN.'", "commit"),
        say("Committed the get_type fix with the reasoning in the message body.", "done"),
    ]},
    {"days_ago": 8, "hour": 15.0, "steps": [  # s05: token limit too low, found with git log -S
        plant("sqlparse/engine/grouping.py", "MAX_GROUPING_TOKENS = 10000", "MAX_GROUPING_TOKENS = 100",
              "Tighten grouping limits for DoS protection"),
        user("Formatting a big INSERT with a few hundred rows of values now crashes with an error about too many"
             " tokens. It used to work last month. What changed?", "prompt"),
        bash("python3 -c \"import sqlparse; rows = ', '.join('(%d, %d)' % (i, i) for i in range(300));"
             " sqlparse.format('INSERT INTO t VALUES ' + rows, reindent=True)\"", "crash", expect=1),
        bash("grep -n 'MAX_GROUPING' -r sqlparse", "grep"),
        bash("git log -S 'MAX_GROUPING_TOKENS = 100' --oneline", "pickaxe"),
        bash("git log --oneline -5", "log"),
        bash("git show --stat HEAD", "show"),
        say("The crash comes from the grouping engine's safety limit. `MAX_GROUPING_TOKENS` was lowered from 10000"
            " to 100 by the latest commit, \"Tighten grouping limits for DoS protection\". A 300-row INSERT has"
            " well over 100 tokens in one group, so `group` raises SQLParseError before formatting starts. The"
            " limit exists to stop quadratic grouping on hostile input, but 100 is far below any real statement.",
            "explain"),
        user("Should we make the limit configurable instead of hard-coding it?"),
        say("We decided to restore 10000 and not add an option now: the number came from the security fix in"
            " 0.6.0, where it was measured against the attack, and an option would let callers switch the"
            " protection off without knowing why it exists. If someone needs larger statements we can revisit.",
            "decision"),
        edit("sqlparse/engine/grouping.py", "MAX_GROUPING_TOKENS = 100", "MAX_GROUPING_TOKENS = 10000", "edit"),
        bash(f"{PYTEST} tests/test_dos_prevention.py", "pass"),
        bash("git commit -am 'Restore the grouping token limit of 10000'", "commit"),
        say("Restored the limit, the DoS prevention tests pass, and it is committed.", "done"),
    ]},
    {"days_ago": 7, "hour": 11.0, "steps": [  # s06: the release
        user("Let's cut a release with the three fixes so far. Run everything first.", "prompt"),
        bash(f"{PYTEST} tests", "suite"),
        read("CHANGELOG", "read_changelog", offset=1, limit=12),
        edit("CHANGELOG", "Development Version\n-------------------\n\nNothing yet.",
             "Release 0.6.1 (Nov 2026)\n------------------------\n\nBug Fixes\n\n* Restore line breaks when"
             " splitting on unquoted newlines.\n* Report the DML type of statements that start with a CTE.\n*"
             " Restore the grouping token limit of 10000.", "changelog"),
        edit("sqlparse/__init__.py", '__version__ = "0.6.1.dev0"', '__version__ = "0.6.1"', "version"),
        bash("git commit -am 'Release 0.6.1'", "commit"),
        bash("git tag -a 0.6.1 -m 'sqlparse 0.6.1'", "tag"),
        bash("git log --oneline --decorate -5", "log"),
        say("Release 0.6.1 is tagged: the full suite passed first, the changelog lists the three fixes, and the"
            " version string is bumped. Pushing the tag will trigger the publish workflow.", "done"),
    ]},
    {"days_ago": 6, "hour": 10.0, "steps": [  # s07: hints stripped (after the release)
        plant("sqlparse/filters/others.py", HINT_OLD, HINT_BAD, "Simplify comment stripping"),
        user("After upgrading, our optimizer hints like /*+ INDEX(t idx) */ vanish when we format with"
             " strip_comments. They must survive.", "prompt"),
        bash(f"{PYTEST} tests/test_format.py -k strip_comments", "fail", expect=1),
        bash("grep -n 'sql_hints' -r sqlparse", "grep"),
        read("sqlparse/filters/others.py", "read", offset=14, limit=50),
        say("The comment filter decides per comment whether it is a hint. A token whose type is one of the hint"
            " types should set `is_sql_hint = True` so the loop skips it; the last commit (\"Simplify comment"
            " stripping\") set it to False in that branch, so hints were treated as ordinary comments and"
            " removed.", "explain"),
        edit("sqlparse/filters/others.py", HINT_BAD, HINT_OLD, "edit"),
        bash(f"{PYTEST} tests/test_format.py -k strip_comments", "pass"),
        bash("git diff --stat", "diffstat"),
        bash("git commit -am 'Keep SQL hints when stripping comments'", "commit"),
        say("Hints are kept again; the strip_comments tests pass and the fix is committed.", "done"),
        user("Did anything else land in that teammate commit?"),
        bash("git show --stat HEAD~1", "show"),
        say("No, that commit touched only sqlparse/filters/others.py, the one line we fixed.", "answer"),
    ]},
    {"days_ago": 5, "hour": 13.0, "steps": [  # s08: checking a claim, no change
        user("Someone said right_margin accepts any number. Is a margin of 5 rejected? Just check, don't change"
             " code.", "prompt"),
        bash("python3 -c \"import sqlparse; sqlparse.format('select 1', right_margin=5)\"", "check", expect=1),
        bash("python3 -c \"import sqlparse; print(repr(sqlparse.format('select a, b from t', right_margin=12)))\"",
             "check_ok", expect=1),
        bash("grep -n 'right_margin' -r sqlparse", "grep"),
        say("The claim is wrong about validation: `validate_options` rejects a margin below 10 with"
            " \"right_margin requires an integer > 10\". But a valid margin of 12 does not work either: the"
            " validation passes and then the right margin filter itself raises NotImplementedError from its"
            " process method, so the option is effectively unimplemented. I changed nothing.", "answer"),
        user("And how do the docs describe it?"),
        bash("grep -rn 'right_margin' docs/source | head -5", "docs"),
        say("The docs describe right_margin as the column after which lines are wrapped, and say nothing about a"
            " minimum.", "docs_answer"),
    ]},
    {"days_ago": 3, "hour": 10.5, "steps": [  # s09: python output var names
        plant("sqlparse/filters/output.py", PYVAR_OLD, PYVAR_BAD, "Separate counter in generated names"),
        user("The Python output format names the second statement's variable sql_2 now; our code generator"
             " expects sql2. Fix it please.", "prompt"),
        bash(f"{PYTEST} tests/test_format.py -k python", "fail", expect=1),
        read("sqlparse/filters/output.py", "read", offset=1, limit=40),
        bash("grep -rn 'output_format' sqlparse/formatter.py", "grep"),
        say("In `OutputFilter.process` each statement after the first gets the counter appended to the variable"
            " name. The teammate commit added an underscore between name and counter, which changes generated"
            " code that callers depend on; the test expects `sql2`. Removing the underscore restores it.",
            "explain"),
        edit("sqlparse/filters/output.py", PYVAR_BAD, PYVAR_OLD, "edit"),
        bash(f"{PYTEST} tests/test_format.py -k python", "pass"),
        bash("git commit -am 'Name later statements sql2, sql3 again in Python output'", "commit"),
        say("Done and committed.", "done"),
    ]},
    {"days_ago": 2, "hour": 9.0, "steps": [  # s10: wrap_after 0, then a merge
        plant("sqlparse/formatter.py", WRAP_OLD, WRAP_BAD, "Validate wrap_after strictly"),
        user("Calling format with reindent and the default wrap setting now raises an error. What broke?",
             "prompt"),
        bash("python3 -c \"import sqlparse; print(sqlparse.format('select a, b from t', reindent=True))\"",
             "crash", expect=1),
        bash(f"{PYTEST} tests/test_format.py -x", "fail", expect=1),
        read("sqlparse/formatter.py", "read", offset=100, limit=20),
        say("`wrap_after` defaults to 0, which means never wrap. The check was changed to reject values below 1,"
            " so the default itself is now refused and every reindent call fails before formatting. The check"
            " must reject only negative numbers.", "explain"),
        edit("sqlparse/formatter.py", WRAP_BAD, WRAP_OLD, "edit"),
        bash(f"{PYTEST} tests/test_format.py", "pass"),
        bash("git status --short", "status"),
        bash("git commit -am 'Accept wrap_after=0 (the default) again'", "commit"),
        say("Fixed and committed; reindent works with the default again.", "done"),
        {"do": "shell", "command": "git checkout -q -b docs-typos && sed -i 's/the the /the /' README.md docs/source/intro.rst; "
                                   "git commit -qam 'Fix typos in README' --allow-empty && git checkout -q main"},
        user("Sam's docs-typos branch is ready. Merge it into main.", "prompt_merge"),
        bash("git log --oneline main..docs-typos", "branch_log"),
        bash("git merge --no-ff docs-typos -m 'Merge branch docs-typos'", "merge"),
        say("Merged docs-typos into main with a merge commit.", "merged"),
    ]},
    {"days_ago": 1, "hour": 10.0, "steps": [  # s11: a slow path, measured, deferred
        user("Formatting our 2,000-line migration file feels slow. Measure where the time goes.", "prompt"),
        bash("python3 -c \"import time, sqlparse; sql = 'select a, b, c from t where x = 1;\\n' * 2000;"
             " t = time.perf_counter(); sqlparse.format(sql, reindent=True); print(f'reindent:"
             " {time.perf_counter() - t:.2f}s'); t = time.perf_counter(); sqlparse.format(sql);"
             " print(f'plain: {time.perf_counter() - t:.2f}s')\"", "measure"),
        bash("python3 -m cProfile -s cumtime -c \"import sqlparse; sqlparse.format('select a, b, c from t where x"
             " = 1;\\n' * 500, reindent=True)\" 2>&1 | head -25 || true", "profile", expect=None),
        bash("grep -n 'def group' sqlparse/engine/grouping.py | head -20", "grep"),
        say("Reindenting is what costs: plain formatting of the file is quick, while reindent spends most of its"
            " time grouping tokens into the statement tree, once per statement (the profiler call failed: cProfile"
            " has no -c option, but the two timings say enough). It is linear in the number of statements, not quadratic, so there is no bug here. We"
            " could cache or skip grouping for statements without reindentable parts, but I would leave it until"
            " someone needs it.", "explain"),
        user("Agreed, let's leave performance alone for now.", "defer"),
    ]},
    {"days_ago": 1, "hour": 15.0, "steps": [  # s12: mismatched quotes, a new test first
        plant("sqlparse/utils.py", QUOTES_OLD, QUOTES_BAD, "Faster quote removal"),
        user("remove_quotes turns the string 'abc\" into abc even though the quotes don't match. Add a test that"
             " shows it, then fix it.", "prompt"),
        read("tests/test_utils.py", "read_test"),
        edit("tests/test_utils.py", "    ['`foo`', 'foo']))", "    ['`foo`', 'foo'],\n    ['\\'foo\"', '\\'foo\"']))",
             "edit_test"),
        bash(f"{PYTEST} tests/test_utils.py", "fail", expect=1),
        read("sqlparse/utils.py", "read", offset=54, limit=10),
        say("The new case fails as expected: `remove_quotes` strips the outer characters whenever the first one is"
            " a quote, without checking that the last one is the same quote. The check for a matching closing"
            " quote was dropped in \"Faster quote removal\".", "explain"),
        edit("sqlparse/utils.py", QUOTES_BAD, QUOTES_OLD, "edit"),
        bash(f"{PYTEST} tests/test_utils.py", "pass"),
        bash("git commit -am 'Strip quotes only when they match' ", "commit"),
        say("The test now passes and both the test and the fix are committed.", "done"),
    ]},    {"days_ago": 11, "hour": 16.0, "steps": [  # s13: setting up, the earliest session
        user("Before I start on sqlparse tomorrow: check my environment is fine for development here.", "prompt"),
        bash("python3 --version", "python"),
        read("pyproject.toml", "read", offset=1, limit=50),
        bash("python3 -m pip list 2>/dev/null | grep -i -E 'pytest|ruff|sqlparse' || true", "pip", expect=None),
        bash("git branch -a && git remote -v", "branches"),
        read("CONTRIBUTING.md", "read_contrib"),
        say("Your environment is ready: Python 3 is newer than the 3.10 the project requires, pytest is installed,"
            " and the checkout is on main with the upstream remote. CONTRIBUTING asks for a test with every fix"
            " and for changelog entries under the development version.", "answer"),
    ]},
    {"days_ago": 6, "hour": 16.0, "steps": [  # s14: TODOs
        user("What TODOs are lying around in the package? Anything worth picking up?", "prompt"),
        bash("grep -rn 'TODO' sqlparse", "grep"),
        read("sqlparse/cli.py", "read", offset=20, limit=30),
        read("TODO", "read_todo"),
        say("Most TODOs are small: the CLI module wants tests and argparse `type` converters, the keyword regexes"
            " note that spaces before a period are not handled, and grouping has a note about end indexes. The"
            " CLI tests exist by now (tests/test_cli.py), so that note is stale. The argparse cleanup is the only"
            " one I'd pick up, and it is cosmetic.", "answer"),
        user("Leave them. Note the stale one for later.", "leave"),
    ]},
    {"days_ago": 4, "hour": 10.0, "steps": [  # s15: CI question, passes locally
        user("CI says the keyword tests failed on one runner overnight. Can you reproduce it locally?", "prompt"),
        bash(f"{PYTEST} tests/test_keywords.py tests/test_tokenize.py", "pass"),
        bash("git log --oneline -3", "log"),
        bash("git status --short", "status"),
        say("I cannot reproduce it: the keyword and tokenizer tests pass here on the same commit, and the working"
            " tree is clean. Since nothing changed between the green and red runs, the overnight failure looks like"
            " the runner, not the code. Re-running the job should confirm.", "answer"),
    ]},
    {"days_ago": 3, "hour": 15.0, "steps": [  # s16: keyword case, docs edit
        user("How does keyword_case work, and do the docs list its allowed values?", "prompt"),
        bash("grep -n 'keyword_case' -r sqlparse docs/source", "grep"),
        read("sqlparse/formatter.py", "read", offset=14, limit=12),
        bash("python3 -c \"import sqlparse; print(sqlparse.format('select id from users', keyword_case='upper'))\"",
             "run"),
        read("docs/source/api.rst", "read_docs", offset=20, limit=20),
        say("keyword_case takes 'upper', 'lower' or 'capitalize'; anything else raises SQLParseError in"
            " validate_options, and the KeywordCaseFilter applies it to keyword tokens only, so identifiers keep"
            " their case (the run printed SELECT id FROM users). The API docs list the three values.", "answer"),
    ]},
]
