"""The conversational held-out set: real chat between people, stored as codeoid sessions, with questions whose
answer is one or two turns.

Source: the `chitchat-dataset` package on PyPI (version 0.9.0, MIT licence, Copyright (c) 2019 Perception,
Control and Cognition Lab, BYU): 7,168 open-domain text conversations between students in the lab's Chit-Chat
Challenge, each message with its sender and timestamp. The data ships inside the wheel
(`chitchat_dataset/dataset.json`); nothing is downloaded at run time beyond installing that package.

Made deterministically (seed 13): 200 conversations of 24-60 turns, in 8 groups of 25. A group is one workspace
(as one LoCoMo conversation is one memory), its conversations are sessions three days apart. A turn is one
sender's consecutive messages joined by newlines; the conversation's first sender is `user`, the other
`assistant`. `questions.jsonl` (written by hand, see its README lines in `evaluate.py`) names each answer by its
key `g<group>-c<conversation>-t<turn>`; groups 0-3 are the tuning half, 4-7 held out.

    pip install chitchat-dataset==0.9.0 && .venv/bin/python benchmarks/retrieval/conversations/make_corpus.py
"""

from __future__ import annotations

import gzip
import json
import random
from datetime import datetime
from importlib import resources
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 13
GROUPS = 8
PER_GROUP = 25
DAYS_APART = 3


def main() -> None:
    data = json.loads(resources.files("chitchat_dataset").joinpath("dataset.json").read_text())
    keys = sorted(key for key, conversation in data.items() if 24 <= len(conversation["messages"]) <= 60)
    chosen = random.Random(SEED).sample(keys, GROUPS * PER_GROUP)
    episodes = []
    for group in range(GROUPS):
        for number, key in enumerate(chosen[group * PER_GROUP:(group + 1) * PER_GROUP]):
            turns = data[key]["messages"]
            first_sender = turns[0][0]["sender"]
            start = _seconds(turns[0][0]["timestamp"])
            for index, messages in enumerate(turns):
                episodes.append({
                    "key": f"g{group}-c{number}-t{index}", "group": group, "session": f"g{group}-c{number}",
                    "kind": "user" if messages[0]["sender"] == first_sender else "assistant",
                    "text": "\n".join(message["text"] for message in messages),
                    "at": number * DAYS_APART * 86400 + (_seconds(messages[0]["timestamp"]) - start),
                    "source": key,
                })
    with gzip.open(HERE / "corpus.jsonl.gz", "wt") as out:
        for episode in episodes:
            out.write(json.dumps(episode) + "\n")
    print(f"{len(episodes)} turns in {GROUPS * PER_GROUP} conversations")


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


if __name__ == "__main__":
    main()
