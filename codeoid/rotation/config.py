"""When to rotate: the thresholds and the guard, from the `[rotation]` table of the config file and the environment.

Only the supervisor reads this. It writes the values it runs with into the run directory's state file, so hooks
and the status line see the same numbers without parsing TOML on their hot paths.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass

from codeoid import paths

DEFAULT_SOFT = 0.90
DEFAULT_HARD = 0.97
DEFAULT_MIN_TURNS = 5

ENV_AUTO_ROTATE = "CODEOID_AUTO_ROTATE"
ENV_SOFT = "CODEOID_ROTATE_SOFT"
ENV_HARD = "CODEOID_ROTATE_HARD"
ENV_MIN_TURNS = "CODEOID_ROTATE_MIN_TURNS"


class ConfigError(ValueError):
    """A rotation setting is unusable; the message names the setting and what it must be."""


@dataclass(frozen=True)
class RotationConfig:
    """`soft` and `hard` are fractions of the window; `min_turns` counts user prompts since the last rotation."""

    soft: float = DEFAULT_SOFT
    hard: float = DEFAULT_HARD
    auto_rotate: bool = False
    min_turns: int = DEFAULT_MIN_TURNS

    def __post_init__(self) -> None:
        if not 0 < self.soft <= 1 or not 0 < self.hard <= 1:
            raise ConfigError(f"rotation thresholds are fractions of the window in (0, 1]: soft={self.soft}, "
                              f"hard={self.hard}")
        if self.soft > self.hard:
            raise ConfigError(f"the soft threshold ({self.soft}) must not be above the hard one ({self.hard})")
        if self.min_turns < 0:
            raise ConfigError(f"min_turns must be 0 or more, not {self.min_turns}")

    def due(self, tokens: int, window: int, prompts: int) -> str | None:
        """Why the next user prompt should rotate ("hard" or "soft"), or None.

        The guard holds both thresholds back until `min_turns` prompts went into this window, so a window that
        fills fast right after a rotation is not rotated again and again; `/rotate` ignores the guard.
        """
        if window <= 0 or prompts < self.min_turns:
            return None
        share = tokens / window
        if share >= self.hard:
            return "hard"
        if self.auto_rotate and share >= self.soft:
            return "soft"
        return None


def load_config(environ: dict[str, str] | None = None, config_path: str | None = None) -> RotationConfig:
    """Defaults, overridden by the config file's `[rotation]` table, overridden by the environment."""
    environ = dict(os.environ) if environ is None else environ
    table = _rotation_table(config_path or paths.config_file())
    values = {
        "soft": _fraction(environ.get(ENV_SOFT), table.get("soft"), DEFAULT_SOFT, "soft"),
        "hard": _fraction(environ.get(ENV_HARD), table.get("hard"), DEFAULT_HARD, "hard"),
        "auto_rotate": _flag(environ.get(ENV_AUTO_ROTATE), table.get("auto_rotate")),
        "min_turns": _count(environ.get(ENV_MIN_TURNS), table.get("min_turns"), DEFAULT_MIN_TURNS),
    }
    return RotationConfig(**values)  # type: ignore[arg-type]


def _rotation_table(path: str) -> dict[str, object]:
    try:
        with open(path, "rb") as file:
            document = tomllib.load(file)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from error
    table = document.get("rotation", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [rotation] must be a table")
    return table


def _fraction(env: str | None, configured: object, default: float, name: str) -> float:
    """A threshold as a fraction; `90` and `90%` are read as percentages, so either way of writing it works."""
    raw: object = env if env not in (None, "") else configured
    if raw is None:
        return default
    try:
        value = float(str(raw).rstrip("%"))
    except ValueError as error:
        raise ConfigError(f"the {name} rotation threshold {raw!r} is not a number") from error
    return value / 100 if value > 1 else value


def _flag(env: str | None, configured: object) -> bool:
    if env not in (None, ""):
        return str(env).strip().lower() in ("1", "true", "yes", "on")
    return bool(configured) if configured is not None else False


def _count(env: str | None, configured: object, default: int) -> int:
    raw: object = env if env not in (None, "") else configured
    if raw is None:
        return default
    try:
        return int(str(raw))
    except ValueError as error:
        raise ConfigError(f"min_turns {raw!r} is not a whole number") from error
