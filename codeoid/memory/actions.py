"""What an episode did and what a question asks for, in the same words: roles and action tags.

A question names the kind of episode it wants far more often than it names the episode's words: "what broke"
wants a failing run, "did we commit" a `git commit`, "how did we check" a run, "what changed" an edit, "why" the
explanation that closed a turn of work. Recall gives a bonus to the candidates whose tags the question names
(`codeoid.memory.ranking`, `codeoid.memory.turns`); the tags never make a match on their own.

An episode's *role* is one of `user`, `assistant`, or for a tool call what it did: `change` (an edit, or a `git
diff` / `git show` run), `read` (a Read, or a `cat` of a file, as `recall_file` counts one), `run` (a shell
command) or `tool` (searches, MCP tools). A tool call's further *tags* say how a run went and what it was:
`failed` or `passed` (its exit), `test` (a test runner), `commit` (git's history-writing commands, tags and merges
among them). A question's cues name roles and tags; the cues were chosen on the tuning halves of the coding sets
(docs/retrieval.md).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# Tool names of each action, as Claude Code, Codex and Gemini CLI record them; any other tool (a search, an MCP
# tool) is plain `tool`, which no cue names.
CHANGE_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch", "replace", "write_file"})
READ_TOOLS = frozenset({"Read", "read_file", "read_many_files"})
RUN_TOOLS = frozenset({"Bash", "shell", "exec_command", "run_shell_command"})
TOOL_ROLES = frozenset({"change", "read", "run", "tool"})

_SHOWS_A_CHANGE = re.compile(r"\s*git\s+(diff|show)\b")
_PRINTS_A_FILE = re.compile(r"\s*cat\s")
# A shell command's first words after `cd DIR &&`, env assignments and `sudo`/`time`/`uv run`-style runners.
_PREFIX = re.compile(r"^\s*(?:cd\s+\S+\s*(?:&&|;)\s*|[A-Z_][A-Z0-9_]*=\S*\s+|(?:sudo|time|env|nice|uv\s+run|"
                     r"poetry\s+run|pdm\s+run|npx|pnpm\s+exec)\s+)*")
_WRITES_HISTORY = re.compile(r"git\s+(?:-C\s+\S+\s+)?(commit|tag|merge|push|rebase|cherry-pick|revert|am)\b")
_RUNS_TESTS = re.compile(
    r"(?:\S*/)?(?:python3?\s+-m\s+)?(pytest|py\.test|tox|nox|unittest)\b|(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test\b"
    r"|\b(jest|vitest|mocha|rspec|phpunit|ctest)\b|(?:cargo|go|dotnet|mix|swift|zig)\s+test\b"
    r"|\bmake\s+(?:\S+\s+)*?(test|check)\b|(?:gradle|gradlew|mvn)\s+(?:\S+\s+)*?test\b")


def role_of(kind: str, tool_name: str | None, command: str | None) -> str:
    """An episode's role: its kind for a prompt or an answer, what it did for a tool call."""
    if kind != "tool":
        return kind
    if tool_name in CHANGE_TOOLS or (tool_name in RUN_TOOLS and _SHOWS_A_CHANGE.match(command or "")):
        return "change"
    if tool_name in READ_TOOLS or (tool_name in RUN_TOOLS and _PRINTS_A_FILE.match(command or "")):
        return "read"
    return "run" if tool_name in RUN_TOOLS else "tool"


def tags_of(kind: str, tool_name: str | None, command: str | None, is_error: object) -> frozenset[str]:
    """The role and, for a shell run, how it went and what it was (`failed`/`passed`, `test`, `commit`)."""
    return _tags(kind, tool_name, (command or "")[:200], bool(is_error))


@functools.lru_cache(maxsize=8192)  # recall weighs the same commands again and again; a tag costs three regexes
def _tags(kind: str, tool_name: str | None, command: str, is_error: bool) -> frozenset[str]:
    role = role_of(kind, tool_name, command)
    if tool_name not in RUN_TOOLS:
        return frozenset({role})
    tags = {role, "failed" if is_error else "passed"}
    head = _PREFIX.sub("", command, count=1)
    if _WRITES_HISTORY.match(head):
        tags.add("commit")
    if _RUNS_TESTS.search(head):
        tags.add("test")
    return frozenset(tags)


_ASKED = r"(say|said|ask|asked|write|wrote|tell|told|mention|mentioned|want|wanted|request|requested|type|typed)"
_ANSWERED = (r"(say|said|suggest|suggested|answer|answered|tell|told|recommend|recommended|propose|proposed|explain"
             r"|explained|write|wrote|mention|mentioned|reply|replied|think|thought|conclude|concluded)")
# A run is named by what it printed ("the traceback", "the output", "the crash"), by a verb in the past ("what
# broke", "we committed", "the tests passed"), or by a verb after its subject ("did we commit", "how did we check",
# "we run"): bare, "check", "run" and "commit" are as often nouns ("the sign-in check") that name no action.
_RUN_NOUNS = (r"\b(output|traceback|stack ?trace|stderr|stdout|error message|exit (code|status)|test run|failures?"
              r"|log|suite|the (crash|failure|error)s?"
              r"|(the|a|which|last|first|latest|second|previous|penultimate) (other )?(commit|tag|merge)s?"
              r"|commit messages?"
              r"|(tests?|suite|it|build|ci|checks?) (still |ever |all )?pass(es)?)\b")
_RUN_DONE = (r"\b(fail(ed|ing|s)|broke|broken|crash(ed|es|ing)|blew up|went wrong|committed|tagged|merged|pushed"
             r"|checked|verified|confirmed|made sure|ran|passed|passing|measured|timed|benchmarked|profiled"
             r"|reproduced|tested|caught|showed|printed|reported|returned|output)\b"
             r"|\b(did|does|do) (the |our |that |this )?[\w-]+( [\w-]+)? (show|print|report|return|catch)\b")
_SUBJECT = r"\b(?:we|i|you|did (?:we|i|you)|do (?:we|i|you)|to|can (?:we|i|you)|could (?:we|i|you))(?:\s+\w+ly)?"
_RUN_VERBS = (r"(check|run|commit|tag|merge|push|fail|break|crash|verify|confirm|make sure|measure|time"
              r"|benchmark|profile|reproduce|test)")
# Cues for a role (`role_of`): "what did I ask" wants a prompt, "your answer" an answer, "the diff" a change...
_ROLE_CUES = {
    "user": re.compile(rf"\bi\s+(\w+\s+)?{_ASKED}\b|\b(my|our)\s+(question|prompt|request)\b"
                       r"|\bthe user\b", re.IGNORECASE),
    "assistant": re.compile(rf"\b(you|claude)\s+(\w+\s+)?{_ANSWERED}\b|\byour\s+(answer|suggestion|explanation"
                            r"|reply|advice|plan|verdict|opinion|recommendation)\b", re.IGNORECASE),
    "change": re.compile(r"\b(diffs?|edit(s|ed)?|chang(e|es|ed)|patch(es|ed)?|modif(y|ied|ication)|fix(es|ed)?"
                         r"|add(s|ed)?|we (write|wrote|have written))\b"
                         rf"|{_SUBJECT}\s+(delete|remove|rename|replace|rewrite|rewrote|bump|update|insert|drop|tweak"
                         r"|adjust|move)(d|ed|ped)?\b", re.IGNORECASE),
    "run": re.compile(rf"{_RUN_NOUNS}|{_RUN_DONE}|{_SUBJECT}\s+{_RUN_VERBS}\b", re.IGNORECASE),
    # A read is named as one, or by the kind of file whose lines answer: "the speed script", "the release workflow",
    # "the config" (week store: two questions more on the first and fourth tuning halves; "guide", "readme" and
    # "changelog" cost two, whose answers were what we said of the file).
    "read": re.compile(r"\b(the read|we read|opened|contents of)\b"
                       r"|\b(the|this|that|our|bundled|its) ([\w-]+ ){0,2}(script|workflow|config|configuration)\b",
                       re.IGNORECASE),
}
# Cues for a run's tags, beside the `run` role.
_TAG_CUES = {
    "failed": re.compile(r"\b(traceback|stack ?trace|stderr|error message|failures?|fail(ed|ing|s)?|broke|broken"
                         r"|break(s|ing)?|crash(ed|es|ing)?|blew up|blow(s)? up|went wrong|caught|catch(es)?)\b",
                         re.IGNORECASE),
    "passed": re.compile(r"\b(pass(ed|es|ing)?|green|succeed(ed|s)?|make sure|made sure|verif(y|ied)"
                         r"|confirm(ed)?|check(ed)? (that|whether|if)|work(ed|s)?)\b", re.IGNORECASE),
    "commit": re.compile(rf"\b(committed|tagged|merged|pushed|rebased|cherry-picked)\b|{_SUBJECT}\s+(commit|tag"
                         r"|merge|push|rebase|cherry-pick)\b"
                         r"|\b(the|a|which|last|first|second|previous|penultimate) (other )?(commit|tag|merge)\b"
                         r"|\bcommit messages?\b",
                         re.IGNORECASE),
    "test": re.compile(r"\b(tests?|suite|test run|check(ed)? (that|whether|if)|make sure|made sure)\b",
                       re.IGNORECASE),
}
# A question about reasons or conclusions wants the prose that closed a turn of work, not its commands: "why did
# the hints vanish", "what did we decide", "where did the bug come from", "what did the review conclude".
_EXPLANATION = re.compile(
    r"\b(why|reasons?|explain(s|ed)?|explanation|cause[sd]?|root cause|c[oa]me from|comes from|decid(e|ed)"
    r"|decisions?|conclu(de|ded|sion)|verdict|review(ed)?|recommend(ed|ation)?|suggest(ed|ion)?|advice|advise[sd]?"
    r"|how does|how do|how did .* work|what was wrong|what went wrong|the problem with|what did (you|we) find"
    r"|what did (you|we) learn|what should (\w+ ){1,4}do|summar(y|ise|ize)|plan|(have|has|had) in common"
    r"|(could|can|were|did) (you|we) (be able to |manage to )?"
    r"(reproduce|find|figure|tell|work out|confirm))\b", re.IGNORECASE)


# A yes-or-no question about the work, in the present or with a modal ("can the parser cope with a negative span?",
# "would the change break callers?", "is the linter the version the hooks pin?", "if I edit the code, do my edits
# apply?") asks for a verdict, which the answer that closed a turn gives; its verbs are hypothetical and name no
# action done. One about what we did ("could you reproduce the failure", "did the tests pass") still names its
# action. (Week store, third and fourth tuning halves: one and two questions more, the lines set one; no other set
# moved.)
_VERDICT = re.compile(r"^\s*(?:if\b[^,?]{0,120},\s*)?(?:can|could|would|will|should|might|may|is|are|does|do)\b"
                      r"(?!\s+(?:we|you|i)\b)", re.IGNORECASE)


@dataclass(frozen=True)
class Asked:
    """What a question names: roles (`role_of`), run tags (`tags_of`), and whether it asks for an explanation."""

    roles: frozenset[str]
    tags: frozenset[str]
    explanation: bool
    # 1, or less when only a clause saying which turn named the action ("which columns did we keep when we timed
    # the dump": the run is how the turn is named, not surely what is wanted)
    strength: float = 1.0

    @property
    def anything(self) -> bool:
        return bool(self.roles or self.tags or self.explanation)


def query_roles(query: str) -> set[str]:
    """The roles a query names (`user`, `assistant`, or a tool call's `change`, `run`, `read`), by plain cues;
    usually none."""
    return {role for role, cue in _ROLE_CUES.items() if cue.search(query)}


# A leading clause that says which turn the question is about ("when you checked my setup, why did you ..."): its
# verbs name the work that turn did, not the episode wanted, which the main clause names.
_LEADING_CLAUSE = re.compile(r"^\s*(?:when|while|whenever|as|once|after|before)\b[^,?]{0,120},", re.IGNORECASE)
# What a role named only in such a clause is worth beside one the main clause names (week store, second tuning
# half: 0.682 -> 0.705 at a half, no other set moved).
CLAUSE_STRENGTH = 0.5
_TRAILING_CLAUSE = re.compile(r"(?<=\w)\s+(?:when|while|whenever)\s+(?:we|i|you)\b[^,?]*(?=\?|$)", re.IGNORECASE)
# A trailing purpose ("what did we change in the check to get the suite green?"): it says what the work was for, and
# the main clause what is wanted; weighed like the clauses above.
_PURPOSE_CLAUSE = re.compile(r"(?<=\w),?\s+(?:in order |so as )?to\s+(?:get|make|keep|bring|have)\b[^,?]*(?=\?|$)",
                             re.IGNORECASE)


def asked(query: str) -> Asked:
    """Everything the question's words say about the episode it wants."""
    told = _LEADING_CLAUSE.sub("", query, count=1)
    said = _TRAILING_CLAUSE.sub("", told, count=1)
    main = _PURPOSE_CLAUSE.sub("", said, count=1)  # a purpose names no role, but may say how a run went
    strength = 1.0
    if not query_roles(main) and query_roles(told):  # "how many tests were picked when we ran only these"
        main, said, strength = told, told, CLAUSE_STRENGTH
    if _VERDICT.match(told):
        return Asked(frozenset(), frozenset(), True, strength)
    roles = frozenset(query_roles(main))
    tags = frozenset(tag for tag, cue in _TAG_CUES.items() if cue.search(said)) if "run" in roles else frozenset()
    return Asked(roles, tags, bool(_EXPLANATION.search(query)), strength)


def fitting_sql(asked_for: Asked) -> tuple[str, list[object]]:
    """An SQL condition (on alias `e`) every episode that fully fits `asked_for` meets, so a scan for the first or
    last of them reads only those that might (`codeoid.memory.when`); with nothing asked, the user's prompts."""
    if not asked_for.roles:
        return "e.kind = 'user' AND e.origin = 'user'", []
    clauses = []
    if asked_for.roles <= TOOL_ROLES:
        clauses.append("e.kind = 'tool'")
    if "commit" in asked_for.tags:
        clauses.append("coalesce(e.original_command, e.command) LIKE '%git%'")
    if "failed" in asked_for.tags and "passed" not in asked_for.tags:
        clauses.append("e.is_error = 1")
    return " AND ".join(clauses) or "1", []


def fit(asked_for: Asked, tags: frozenset[str]) -> float:
    """How well an episode of `tags` fits what was asked, from 0 to 1: its role named (0.5), plus the share of the
    named run tags it has (0.5). An episode of a named role with none of the tags still fits half."""
    if not asked_for.roles or not tags & asked_for.roles:
        return 0.0
    if not asked_for.tags:
        return 1.0
    return 0.5 + 0.5 * len(tags & asked_for.tags) / len(asked_for.tags)


def fits_in_full(asked_for: Asked, tags: frozenset[str]) -> bool:
    """Whether an episode is wholly what the question names (`fit` 1), or any episode when it names no role: what
    "the first" or "the last" counts among."""
    return not asked_for.roles or fit(asked_for, tags) >= 1.0


def fit_or_explains(asked_for: Asked, tags: frozenset[str]) -> float:
    """`fit`, or, when the question asks why about an action it names, the answer that explains fits half ("why
    did the import crash" wants the explanation beside the crash). A why that names no action ("how do I pay for
    school") gives answers nothing: in a conversation the person's own turn answers it, and even in the coding sets
    the bonus put answers above the output that held the fact (tuning halves: coding MRR 0.717 -> 0.733, lines
    0.464 -> 0.488, conversations R@5 0.745 -> 0.765; the week set's second half lost one of 44)."""
    if asked_for.explanation and asked_for.roles and "assistant" in tags:
        return 0.5
    return fit(asked_for, tags)
