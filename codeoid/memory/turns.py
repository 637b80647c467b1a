"""Turns of work as a unit of ranking: a prompt, the tool calls it led to, and the answers that closed it.

A question asked days later matches the prompt that asked for the work ("why were the lines coming back glued
together?") far better than what answered it: the explanation, the failing run, the edit, the commit. So within a
turn that holds tool calls, the best-scoring episode lends its score to the episodes that fit what the question
asks for (`codeoid.memory.actions`: "why" wants the explanation, "what broke" the failing run, "did we commit" the
commit), and a prompt, which only restates the question, yields to them unless the question asks what was asked.
A question that names no action at all ("what were my two options for the docs build?") is most often answered by
what closed the turn whose prompt it matches, so the turn's closing answer is then lent the prompt's score, when
the question's words or meaning found it at all (its own score above the candidates' mean).
An answer is lent only what the turn's prompt and answers scored: a tool result that matched best is itself the
evidence (a line of a log), and the explanation lifted above it would hide it. Several pieces of one turn are not
several answers: past its first, each further episode of a turn steps back a little, so other turns get a place in
a short list. The weights were chosen on the tuning halves of the coding sets (docs/retrieval.md).

Turns without tool calls (a conversation) are left as they are: there every turn is itself an answer, and lending
between them only crowded the evidence (conversational set, tuning half).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from codeoid.memory import actions
from codeoid.store import queries
from codeoid.store.queries import Row

# How many of the best candidates have their turns looked at.
TURNS_OF_BEST = 20
# The most episodes of one turn weighed (an agent's turn can run hundreds of tool calls): its first ones.
TURN_MEMBERS = 300
MEMBER_COLUMNS = ("e.id, e.kind, e.session_id, e.turn, e.created_at, e.paths, e.tool_name, e.is_error,"
                  " substr(coalesce(e.original_command, e.command), 1, 200) AS original_command")


@dataclass(frozen=True)
class TurnWeights:
    """`lend`: the share of the gap to the turn's best score an episode that fits the question closes (`step` less
    for each that fits better or scores higher on its own). `prompt`: what a work turn's prompt loses when the
    question wants something else. `repeat`: what each further episode of one turn loses in the list.
    `explanation`: the bonus for a work turn's answer when the question asks why (1, not 0.5, once a why that
    names no action stopped favouring every answer: the three week tuning halves and sqlparse's MRR rose, 0.733 ->
    0.768 on sqlparse; conversations, which have no work turns, did not move). `answer`: how far a work turn's
    closing answer fits a question that names no action, which lends it the turn's prompt score (0 leaves it out;
    the week set's tuning halves: shown R@5 0.600 -> 0.675 on the third, MRR up on all three, no other set
    moved)."""

    lend: float = 1.0
    step: float = 0.2
    prompt: float = 1.0
    repeat: float = 0.15
    explanation: float = 1.0
    answer: float = 1.0


@dataclass(frozen=True)
class Member:
    id: int
    kind: str
    turn: tuple[str, int]
    tags: frozenset[str]


def members_of_turns(db: sqlite3.Connection, rows: Mapping[int, Row], ids: Sequence[int], *,
                     workspace_id: int | None, skip_live_of: str | None,
                     exclude_origins: tuple[str, ...]) -> tuple[dict[tuple[str, int], list[Member]], dict[int, Row]]:
    """The recallable episodes of the turns of `ids` that hold a tool call, by turn, and the rows read for those
    not in `rows` (light columns: what ranking weighs, not their text)."""
    wanted: dict[tuple[str, int], None] = {}
    for episode_id in ids:
        row = rows.get(episode_id)
        if row is not None and row.get("turn") is not None:
            wanted[(str(row["session_id"]), int(str(row["turn"])))] = None
    found: dict[int, Row] = {}
    for session_id, turn in wanted:
        found.update(_turn_rows(db, session_id, turn, workspace_id, skip_live_of, exclude_origins))
    turns: dict[tuple[str, int], list[Member]] = {}
    for row in sorted(found.values(), key=lambda row: int(str(row["id"]))):
        key = (str(row["session_id"]), int(str(row["turn"])))
        turns.setdefault(key, []).append(Member(int(str(row["id"])), str(row["kind"]), key, tags_of_row(row)))
    work = {key: members for key, members in turns.items() if any(m.kind == "tool" for m in members)}
    return work, {episode_id: row for episode_id, row in found.items() if episode_id not in rows}


def _turn_rows(db: sqlite3.Connection, session_id: str, turn: int, workspace_id: int | None,
               skip_live_of: str | None, exclude_origins: tuple[str, ...]) -> dict[int, Row]:
    found = queries.recallable_episodes_where(
        db, "e.session_id = ? AND e.turn = ?", [session_id, turn], workspace_id=workspace_id,
        skip_live_of=skip_live_of, exclude_origins=exclude_origins, columns=MEMBER_COLUMNS, limit=TURN_MEMBERS)
    return {int(str(row["id"])): row for row in found}


def tags_of_row(row: Row) -> frozenset[str]:
    return actions.tags_of(str(row["kind"]), _str(row.get("tool_name")), _str(row.get("original_command")),
                           row.get("is_error"))


def rerank(scored: list[tuple[int, float]], turns: Mapping[tuple[str, int], list[Member]],
           score_of: Callable[[int], float], asked: actions.Asked, weights: TurnWeights) -> list[tuple[int, float]]:
    """`scored` (best first) with each work turn's episodes rescored: those that fit the question, best fit first
    and then by their own score, are lent the turn's best score (each a `step` below the one before), its prompt
    steps back when the question wants something else, and each episode of a turn after the first steps back
    `repeat` further. `score_of` scores an episode that was not a candidate."""
    scores = dict(scored)
    fit_of: dict[int, float] = {}  # at an equal score, what fits the question comes first (`_best_first`)
    for members in turns.values():
        own = {m.id: scores[m.id] if m.id in scores else score_of(m.id) for m in members}
        best = max(own.values())
        # An answer is lent only what the turn's prompt and answers scored: a tool result that matched best is
        # itself the evidence, and the explanation lifted above it would hide it.
        said = max((own[m.id] for m in members if m.kind != "tool"), default=best)
        closing = next((m.id for m in reversed(members) if m.kind == "assistant"), None)
        fits = {m.id: _fit(asked, m, weights.answer if m.id == closing and own[m.id] > 0 else 0.0)
                for m in members}
        fit_of.update(fits)
        fitting = sorted((m for m in members if fits[m.id]), key=lambda m: (-fits[m.id], -own[m.id]))
        for place, member in enumerate(fitting):
            target = (best if member.kind == "tool" else said) - weights.step * place
            # Lent whole, it is the target exactly: the episode that lent it and the one that fits must tie (and the
            # one that fits come first), not fall either side of it by a rounding error.
            score = max(own[member.id], target) if weights.lend >= 1.0 else \
                own[member.id] + weights.lend * max(0.0, target - own[member.id])
            if asked.explanation and member.kind == "assistant":
                score += weights.explanation
            scores[member.id] = score
        for member in members:
            if member.kind == "user" and not fits[member.id] and asked.anything:
                scores[member.id] = own[member.id] - weights.prompt
    ranked = _best_first(scores.items(), fit_of)
    if not weights.repeat:
        return ranked
    turn_of = {m.id: m.turn for members in turns.values() for m in members}
    seen: dict[tuple[str, int], int] = {}
    stepped = []
    for episode_id, score in ranked:
        turn = turn_of.get(episode_id)
        if turn is not None:
            score -= weights.repeat * seen.get(turn, 0)
            seen[turn] = seen.get(turn, 0) + 1
        stepped.append((episode_id, score))
    return _best_first(stepped, fit_of)


def _best_first(scores: Iterable[tuple[int, float]], fit_of: Mapping[int, float]) -> list[tuple[int, float]]:
    """Best score first; at an equal score the episode that fits the question better, then the newer."""
    return sorted(scores, key=lambda item: (-item[1], -fit_of.get(item[0], 0.0), -item[0]))


def _fit(asked: actions.Asked, member: Member, answer: float) -> float:
    """How far a turn's episode fits the question: by its role and tags, or, when the question asks why, as the
    answer that closed the turn; when it names nothing, an answer fits by `answer`."""
    if member.kind == "assistant" and (asked.explanation or not asked.anything):
        return 1.0 if asked.explanation else answer
    # A question that asks why names its run only to say which ("the cause when the import crashed"): the run
    # fits after the explanation.
    return actions.fit(asked, member.tags) * (0.5 if asked.explanation else 1.0)


def _str(value: object) -> str | None:
    return None if value is None else str(value)
