"""Turns of work as a unit of ranking: a prompt, the tool calls it led to, and the answers that closed it.

A question asked days later matches the prompt that asked for the work ("why were the lines coming back glued
together?") far better than what answered it: the explanation, the failing run, the edit, the commit. So within a
turn that holds tool calls, the best-scoring episode lends its score to the episodes that fit what the question
asks for (`codeoid.memory.actions`: "why" wants the explanation, "what broke" the failing run, "did we commit" the
commit), and a prompt, which only restates the question, yields to them unless the question asks what was asked.
Several pieces of one turn are not several answers: past its first, each further episode of a turn steps back a
little, so other turns get a place in a short list.

Turns without tool calls (a conversation) are left as they are: there every turn is itself an answer, and lending
between them only crowded the evidence (conversational set, tuning half).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from codeoid.memory import actions
from codeoid.store import queries
from codeoid.store.queries import Row

# How many of the best candidates have their turns looked at.
TURNS_OF_BEST = 30
# A turn's episodes are looked for this many ids either side of a candidate (a turn is contiguous in its session).
TURN_REACH = 400
MEMBER_COLUMNS = ("e.id, e.kind, e.session_id, e.turn, e.created_at, e.paths, e.tool_name, e.is_error,"
                  " substr(coalesce(e.original_command, e.command), 1, 200) AS original_command")


@dataclass(frozen=True)
class TurnWeights:
    """`lend`: the share of the gap to the turn's best score an episode that fits the question closes. `prompt`:
    what a work turn's prompt loses when the question wants something else. `repeat`: what each further episode of
    one turn loses in the list. `explanation`: the bonus for a work turn's answer when the question asks why."""

    lend: float = 1.0
    prompt: float = 1.0
    repeat: float = 0.3
    explanation: float = 1.5


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
    wanted: dict[tuple[str, int], int] = {}
    for episode_id in ids:
        row = rows.get(episode_id)
        if row is None or row.get("turn") is None:
            continue
        wanted.setdefault((str(row["session_id"]), int(str(row["turn"]))), episode_id)
    found: dict[int, Row] = {}
    for (session_id, turn), episode_id in wanted.items():
        found.update(_turn_rows(db, session_id, turn, episode_id, workspace_id, skip_live_of, exclude_origins))
    turns: dict[tuple[str, int], list[Member]] = {}
    for row in sorted(found.values(), key=lambda row: int(str(row["id"]))):
        key = (str(row["session_id"]), int(str(row["turn"])))
        turns.setdefault(key, []).append(Member(int(str(row["id"])), str(row["kind"]), key, tags_of_row(row)))
    work = {key: members for key, members in turns.items() if any(m.kind == "tool" for m in members)}
    return work, {episode_id: row for episode_id, row in found.items() if episode_id not in rows}


def _turn_rows(db: sqlite3.Connection, session_id: str, turn: int, near: int, workspace_id: int | None,
               skip_live_of: str | None, exclude_origins: tuple[str, ...]) -> dict[int, Row]:
    found = queries.recallable_episodes_where(
        db, "e.session_id = ? AND e.id BETWEEN ? AND ? AND e.turn = ?",
        [session_id, near - TURN_REACH, near + TURN_REACH, turn], workspace_id=workspace_id,
        skip_live_of=skip_live_of, exclude_origins=exclude_origins, columns=MEMBER_COLUMNS)
    return {int(str(row["id"])): row for row in found}


def tags_of_row(row: Row) -> frozenset[str]:
    return actions.tags_of(str(row["kind"]), _str(row.get("tool_name")), _str(row.get("original_command")),
                           row.get("is_error"))


def rerank(scored: list[tuple[int, float]], turns: Mapping[tuple[str, int], list[Member]],
           score_of: Callable[[int], float], asked: actions.Asked, weights: TurnWeights) -> list[tuple[int, float]]:
    """`scored` (best first) with each work turn's episodes rescored: lent the turn's best score as far as they fit
    the question, its prompt stepping back when the question wants something else, and each episode of a turn
    after the first stepping back `repeat` further. `score_of` scores an episode that was not a candidate."""
    scores = dict(scored)
    for members in turns.values():
        own = {m.id: scores[m.id] if m.id in scores else score_of(m.id) for m in members}
        best = max(own.values())
        for member in members:
            score = own[member.id]
            fits = _fit(asked, member)
            if fits:
                score += weights.lend * fits * max(0.0, best - score)
                if asked.explanation and member.kind == "assistant":
                    score += weights.explanation
            elif member.kind == "user" and asked.anything:
                score -= weights.prompt
            scores[member.id] = score
    ranked = sorted(scores.items(), key=lambda item: (-item[1], -item[0]))
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
    return sorted(stepped, key=lambda item: (-item[1], -item[0]))


def _fit(asked: actions.Asked, member: Member) -> float:
    """How far a turn's episode fits the question: by its role and tags, or, when the question asks why, as the
    answer that closed the turn."""
    if asked.explanation and member.kind == "assistant":
        return 1.0
    return actions.fit(asked, member.tags)


def _str(value: object) -> str | None:
    return None if value is None else str(value)
