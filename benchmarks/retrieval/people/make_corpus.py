"""The harder conversational set, shaped like LoCoMo: one person's chats over weeks, many sessions, real dates.

Source: the `chitchat-dataset` package on PyPI (version 0.9.0, MIT licence, Copyright (c) 2019 Perception,
Control and Cognition Lab, BYU): 7,168 open-domain text conversations between students in the lab's Chit-Chat
Challenge (April-November 2018), each message with its sender's anonymous id and its timestamp. The data ships
inside the wheel (`chitchat_dataset/dataset.json`); nothing is downloaded at run time beyond installing it.

The same students chatted many times, with different partners, over days and weeks. A memory here is one of them:
the ten most frequent senders (conversations of 16-80 turns, none of the 200 the first conversational set uses,
none given to two memories) each get `SESSIONS` of their conversations picked with seed 2018 and kept in
time order, with their real timestamps (dates from April to November 2018). A session is one conversation; that
student is `user`, the partner `assistant`, so "what did I say" has a role to name. A turn is one sender's
consecutive messages joined by newlines. Answers are named `p<person>-s<session>-t<turn>`; `questions.jsonl`
(written by hand, see `docs/retrieval.md`) holds persons 0-4 as the tuning half and 5-9 as the held-out half.

    pip install chitchat-dataset==0.9.0 && .venv/bin/python benchmarks/retrieval/people/make_corpus.py
"""

from __future__ import annotations

import gzip
import json
import random
from collections import Counter
from datetime import datetime
from importlib import resources
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 2018
PERSONS = 10
SESSIONS = 20
TURNS = (16, 80)


def main() -> None:
    data = json.loads(resources.files("chitchat_dataset").joinpath("dataset.json").read_text())
    with gzip.open(HERE.parent / "conversations" / "corpus.jsonl.gz", "rt") as lines:
        taken = {json.loads(line)["source"] for line in lines}
    usable = {key: chat["messages"] for key, chat in sorted(data.items())
              if TURNS[0] <= len(chat["messages"]) <= TURNS[1] and key not in taken}
    senders = Counter(sender for messages in usable.values() for sender in _senders(messages))
    rng = random.Random(SEED)
    episodes = []
    person = 0
    for sender, _ in sorted(senders.items(), key=lambda item: (-item[1], item[0])):
        if person == PERSONS:
            break
        mine = sorted(key for key, messages in usable.items() if sender in _senders(messages))
        if len(mine) < SESSIONS:
            continue
        chosen = sorted(rng.sample(mine, SESSIONS), key=lambda key: usable[key][0][0]["timestamp"])
        for session, key in enumerate(chosen):
            for index, messages in enumerate(usable.pop(key)):
                episodes.append({
                    "key": f"p{person}-s{session}-t{index}", "group": person, "session": f"p{person}-s{session}",
                    "kind": "user" if messages[0]["sender"] == sender else "assistant",
                    "text": "\n".join(message["text"] for message in messages),
                    "at": _seconds(messages[0]["timestamp"]), "source": key,
                })
        usable = {key: messages for key, messages in usable.items() if key not in chosen}
        person += 1
    with gzip.open(HERE / "corpus.jsonl.gz", "wt") as out:
        for episode in episodes:
            out.write(json.dumps(episode) + "\n")
    print(f"{len(episodes)} turns, {PERSONS} persons of {SESSIONS} sessions")


def _senders(messages: list[list[dict[str, str]]]) -> set[str]:
    return {message["sender"] for turn in messages for message in turn}


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


if __name__ == "__main__":
    main()
