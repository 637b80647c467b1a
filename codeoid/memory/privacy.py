"""What may leave the store for the vector index: private spans stripped, secrets masked, excluded paths dropped.

The store keeps every byte verbatim (it is the record, private to this user on this machine), and so does its
FTS index, which lives in the same file under the same permissions. The vector index is different: its
documents are a second copy of the text, on a server that may be a team's (`CODEOID_CHROMA_URL`). So
everything written to Chroma passes through `redact` first, and episodes touching an excluded path are never
written at all.

Settings (environment, so hooks, the MCP server and the CLI all agree without reading a file):
- `CODEOID_SECRET_PATTERNS`: extra regular expressions to mask, one per line.
- `CODEOID_EXCLUDE_PATHS`: extra globs of paths never indexed, separated by `os.pathsep`.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

PRIVATE_SPAN = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
PRIVATE_MARK = "[private]"

# (name, pattern). A pattern with a group named `value` masks only that group (the key name stays readable).
SECRET_PATTERNS: tuple[tuple[str, str], ...] = (
    ("private-key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?"
                    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)"),
    ("aws-access-key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"),
    ("aws-secret-key", r"(?i)aws_?secret_?(?:access_?)?key[\"'\s]*[:=]\s*[\"']?(?P<value>[A-Za-z0-9/+=]{40})"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai-key", r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    ("url-credentials", r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:(?P<value>[^\s@/]{3,})@"),
    ("bearer", r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/\-]{16,}=*)"),
    ("assignment", r"(?i)\b[\w.\-]*(?:password|passwd|pwd|secret|token|api_?key|access_?key|auth|credential)s?"
                   r"[\"']?\s*[:=]\s*[\"']?(?P<value>[^\s\"',;]{4,})"),
)
SECRET_MARK = "[secret:{name}]"

DEFAULT_EXCLUDED_PATHS = (
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_ecdsa*", "id_ed25519*", ".netrc",
    ".pgpass", "*/.ssh/*", "*/.aws/credentials", "*/.docker/config.json",
)


@dataclass(frozen=True)
class Policy:
    """The compiled rules; build one per indexer pass with `Policy.from_env()`."""

    secrets: tuple[tuple[str, re.Pattern[str]], ...]
    excluded_globs: tuple[str, ...]

    @classmethod
    def from_env(cls) -> Policy:
        extra = [line.strip() for line in os.environ.get("CODEOID_SECRET_PATTERNS", "").splitlines() if line.strip()]
        secrets = [(name, re.compile(pattern, re.DOTALL)) for name, pattern in SECRET_PATTERNS]
        secrets += [(f"custom-{number}", re.compile(pattern)) for number, pattern in enumerate(extra, 1)]
        globs = [glob for glob in os.environ.get("CODEOID_EXCLUDE_PATHS", "").split(os.pathsep) if glob]
        return cls(tuple(secrets), (*DEFAULT_EXCLUDED_PATHS, *globs))

    def redact(self, text: str) -> str:
        """`text` with `<private>` spans replaced by a mark and every secret masked (line numbers kept).

        Every pattern is matched against the same text and the matches replaced in one pass, so one
        pattern's mark is never taken for another's secret; where matches overlap the earlier one wins.
        """
        text = PRIVATE_SPAN.sub(lambda match: PRIVATE_MARK + _newlines(match), text)
        found: list[tuple[int, int, str]] = []
        for name, pattern in self.secrets:
            for match in pattern.finditer(text):
                if match.end() > match.start():
                    found.append(_masked_span(match, name))
        pieces, at = [], 0
        for start, end, mark in sorted(found):
            if start >= at:
                pieces += [text[at:start], mark]
                at = end
        return "".join(pieces) + text[at:]

    def excluded(self, paths: Iterable[str]) -> bool:
        """Whether any of `paths` matches an excluded glob (by its whole path or by its file name)."""
        for path in paths:
            name = os.path.basename(path.rstrip("/"))
            for glob in self.excluded_globs:
                if fnmatch.fnmatch(path, glob) or fnmatch.fnmatch(name, glob):
                    return True
        return False


def _newlines(match: re.Match[str]) -> str:
    """The line breaks a removed span held: chunks point at line ranges of the verbatim text, so redaction
    must keep every later line on its number."""
    return "\n" * match.group(0).count("\n")


def _masked_span(match: re.Match[str], name: str) -> tuple[int, int, str]:
    """The span to replace and its mark: the `value` group alone where the pattern has one."""
    mark = SECRET_MARK.format(name=name)
    if "value" in match.re.groupindex and match.group("value") is not None:
        return match.start("value"), match.end("value"), mark
    return match.start(), match.end(), mark + _newlines(match)


def redact(text: str) -> str:
    """`Policy.from_env().redact(text)`, for one-off callers."""
    return Policy.from_env().redact(text)
