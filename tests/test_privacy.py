"""Privacy before indexing: what reaches the vector index has private spans and secrets removed, lines kept."""

from __future__ import annotations

import pytest

from codeoid.memory.privacy import Policy

SECRETS = {
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_" + "a1B2" * 9,
    "anthropic-key": "sk-ant-api03-" + "x9" * 20,
    "openai-key": "sk-proj-" + "Q7" * 16,
    "slack-token": "xoxb-123456789012-abcdefghij",
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_token_shaped_secrets_are_masked_by_name(name: str) -> None:
    redacted = Policy.from_env().redact(f"found {SECRETS[name]} in the log")
    assert SECRETS[name] not in redacted
    assert redacted == f"found [secret:{name}] in the log"


def test_assignments_keep_the_key_name_and_lose_the_value() -> None:
    text = 'password = "hunter22"\nDB_TOKEN: abcd1234efgh\napi_key=zzzz9999\nconnect postgres://bob:s3cretpw@db/x'
    redacted = Policy.from_env().redact(text)
    for secret in ("hunter22", "abcd1234efgh", "zzzz9999", "s3cretpw"):
        assert secret not in redacted
    assert 'password = "[secret:assignment]"' in redacted
    assert "DB_TOKEN: [secret:assignment]" in redacted
    assert "postgres://bob:[secret:url-credentials]@db/x" in redacted


def test_private_spans_and_key_blocks_are_removed_keeping_every_line_number() -> None:
    text = ("line 1\nbefore <private>my\nhome address</private> after\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
            "b3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\nline 7 <PRIVATE>unclosed\nline 8")
    redacted = Policy.from_env().redact(text)
    assert "home address" not in redacted and "b3BlbnNzaC1rZXk" not in redacted and "unclosed" not in redacted
    assert "line 8" not in redacted  # an unclosed span runs to the end: better hidden than leaked
    lines = redacted.split("\n")
    assert lines[0] == "line 1" and lines[1] == "before [private]" and lines[2] == " after"
    assert lines[3] == "[secret:private-key]" and lines[6] == "line 7 [private]"
    assert len(lines) == len(text.split("\n"))


def test_ordinary_code_is_left_alone() -> None:
    text = "def tokenize(text):\n    return text.split()\nfor password_field in form: pass\n"
    assert Policy.from_env().redact(text) == text


def test_extra_patterns_and_excluded_paths_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEOID_SECRET_PATTERNS", r"ACME-\d{6}")
    monkeypatch.setenv("CODEOID_EXCLUDE_PATHS", "*/secrets/*:*.sqlite")
    policy = Policy.from_env()
    assert policy.redact("ticket ACME-123456 done") == "ticket [secret:custom-1] done"
    assert policy.excluded(["/repo/secrets/prod.yaml"]) and policy.excluded(["data/app.sqlite"])
    assert policy.excluded(["/repo/.env"]) and policy.excluded(["/home/me/.ssh/id_ed25519"])
    assert not policy.excluded(["/repo/src/app.py", "README.md"])
