"""Topic clusters over episode embeddings, for the workspace index: what this memory is mostly about.

Spherical k-means (the embeddings are unit vectors, so cosine similarity is a dot product) with k-means++
seeding from a fixed seed over vectors in episode-id order: the same episodes always give the same clusters,
which the index needs to stay byte-identical between builds. Each cluster is named by class-based TF-IDF over
its episodes' text (words frequent in it and rare elsewhere) and points at the episode nearest its centre, so
the model has an id to open. Hand-written on numpy (which chromadb already brings) rather than pulling in
scikit-learn and scipy for forty lines.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

MIN_EPISODES = 30  # below this there is too little to group, and the index says nothing about topics
MAX_TOPICS = 8
LABEL_TERMS = 4
ITERATIONS = 25
SEED = 20261130

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
# Words of the episode format and of ordinary English that say nothing about a topic.
_STOP_WORD_TEXT = """
    the and for that this with from you are was were have has had not but all can will would should could
    into out our your their its use used using then than them they there here what when where which who why how
    also just like some any each more most other such only over under about after before again been being both
    does did doing done get got let make made need needs want wants now new one two may might must shall per via
    yes okay please thanks thank sure
    user assistant tool bash read write edit glob grep exit lines line ok error true false none null self return
    def class import str int dict list file files path run running ran command output result results
"""
STOP_WORDS = frozenset(_STOP_WORD_TEXT.split())


@dataclass(frozen=True)
class Topic:
    label: str  # the top terms, most telling first
    share: float  # the fraction of the sampled episodes in this cluster
    example_episode: int  # the episode nearest the cluster's centre


def topic_count(episodes: int) -> int:
    """k grows with the square root of the memory's size, 2 at 30 episodes and `MAX_TOPICS` from ~500."""
    return max(2, min(MAX_TOPICS, round(math.sqrt(episodes / 8))))


def find_topics(episode_ids: Sequence[int], vectors: np.ndarray, texts: Sequence[str]) -> list[Topic]:
    """Clusters of the given episodes, largest first; none when there are fewer than `MIN_EPISODES`."""
    import numpy as np

    if len(episode_ids) < MIN_EPISODES:
        return []
    order = sorted(range(len(episode_ids)), key=lambda i: episode_ids[i])
    ids = [episode_ids[i] for i in order]
    data = np.asarray(vectors, dtype=np.float64)[order]
    data /= np.maximum(np.linalg.norm(data, axis=1, keepdims=True), 1e-12)
    words = [_words(texts[i]) for i in order]
    labels, centres = _spherical_kmeans(data, topic_count(len(ids)))
    names = _label_clusters(words, labels, len(centres))
    topics = []
    for cluster in range(len(centres)):
        members = np.flatnonzero(labels == cluster)
        if members.size == 0 or not names[cluster]:
            continue
        nearest = members[int(np.argmax(data[members] @ centres[cluster]))]
        topics.append(Topic(", ".join(names[cluster]), members.size / len(ids), ids[int(nearest)]))
    return sorted(topics, key=lambda topic: (-topic.share, topic.example_episode))


def _spherical_kmeans(data: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    rng = np.random.default_rng(SEED)
    centres = [data[int(rng.integers(len(data)))]]
    for _ in range(1, k):  # k-means++: each next centre far (in cosine) from the ones chosen
        distance = np.maximum(0.0, 1.0 - np.max(data @ np.array(centres).T, axis=1))
        total = float(distance.sum())
        if total <= 0:
            break
        centres.append(data[int(rng.choice(len(data), p=distance / total))])
    centre_matrix = np.array(centres)
    labels = np.full(len(data), -1)
    for _ in range(ITERATIONS):
        new_labels = np.argmax(data @ centre_matrix.T, axis=1)
        if np.array_equal(new_labels, labels):
            break
        labels = new_labels
        for cluster in range(len(centre_matrix)):
            members = data[labels == cluster]
            if len(members):
                mean = members.sum(axis=0)
                centre_matrix[cluster] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return labels, centre_matrix


def _label_clusters(words: list[set[str]], labels: np.ndarray, k: int) -> list[list[str]]:
    """Class-based TF-IDF: a term's share of a cluster's episodes against its share of all episodes."""
    overall: Counter[str] = Counter()
    per_cluster: list[Counter[str]] = [Counter() for _ in range(k)]
    sizes = [0] * k
    for episode_words, cluster in zip(words, labels, strict=True):
        overall.update(episode_words)
        per_cluster[int(cluster)].update(episode_words)
        sizes[int(cluster)] += 1
    total = len(words)
    names: list[list[str]] = []
    for cluster in range(k):
        if not sizes[cluster]:
            names.append([])
            continue
        scored = [
            (count / sizes[cluster] * math.log(1 + total / overall[term]), term)
            for term, count in per_cluster[cluster].items()
            if count >= 2 or sizes[cluster] < 4
        ]
        names.append([term for _, term in sorted(scored, key=lambda item: (-item[0], item[1]))[:LABEL_TERMS]])
    return names


def _words(text: str) -> set[str]:
    found = {word.lower() for word in _WORD.findall(text)}
    return {word for word in found if word not in STOP_WORDS and not word.isdigit() and not word.startswith("__")}
