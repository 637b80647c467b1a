"""`codeoid allow RULE`: add a Bash allow rule to Claude Code's settings, on the user's word.

codeoid never widens permissions by itself: the rewrite that compresses a command's output (a failure's too) runs
only where Claude Code would have run the command unasked (docs/claude-code-permissions.md). Where the user wants
codeoid to compress a command Claude Code asks about, an allow rule is the one route, and it is the user's to
add: this command shows the rule and the file, asks (unless `--yes`), keeps a backup of the file, and adds the
rule once (running it again changes nothing).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import click

from codeoid.cli.group import cli

SCOPES = ("user", "project", "local")


class BadRule(ValueError):
    """The rule is not one codeoid adds."""


def validate_rule(rule: str) -> str:
    """The rule as Claude Code writes it (`Bash(pytest:*)`, `Bash(git diff)`), or BadRule saying why not.

    Only Bash rules of the forms the rewrite trusts (exact text, or a prefix ending in `:*`, ` *` or `*`), never
    a rule that allows every command (bare `Bash`, `Bash(*)`): that one is for the user to write by hand."""
    rule = rule.strip()
    if not (rule.startswith("Bash(") and rule.endswith(")")):
        raise BadRule("codeoid adds Bash rules only, written like Bash(pytest:*) or Bash(git diff:*)")
    body = rule[5:-1].strip()
    if not body or body in ("*", ":*"):
        raise BadRule("that rule would allow every command; codeoid does not add it (edit your settings yourself)")
    if any(character in body for character in "\n\r\0()"):
        raise BadRule("a rule is one line of command text without parentheses")
    if "*" in body[:-1] or (body.endswith(":*") and not body[:-2].strip()):
        raise BadRule("a wildcard is trusted only at the end (Bash(npm run test:*))")
    return f"Bash({body})"


def settings_path(scope: str, project_dir: str, env: dict[str, str] | os._Environ[str]) -> Path:
    if scope == "user":
        return Path(env.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude") / "settings.json"
    name = "settings.json" if scope == "project" else "settings.local.json"
    return Path(project_dir) / ".claude" / name


def add_allow_rule(path: Path, rule: str) -> Path | None:
    """Add `rule` to the file's `permissions.allow`; the backup's path, or None when it was there already.
    Raises ValueError for a file that is not a JSON object (nothing is written then)."""
    settings: dict[str, object] = {}
    if path.exists():
        settings = json.loads(path.read_text())
        if not isinstance(settings, dict):
            raise ValueError(f"{path} does not hold a JSON object")
    permissions = settings.setdefault("permissions", {})
    if not isinstance(permissions, dict):
        raise ValueError(f"{path}: permissions is not an object")
    allow = permissions.setdefault("allow", [])
    if not isinstance(allow, list):
        raise ValueError(f"{path}: permissions.allow is not a list")
    if rule in allow:
        return None
    allow.append(rule)
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = path.with_name(f"{path.name}.codeoid-backup-{time.strftime('%Y%m%d-%H%M%S')}")
    if path.exists():
        shutil.copy2(path, backup)
    temporary = path.with_name(f".{path.name}.codeoid-{os.getpid()}")
    temporary.write_text(json.dumps(settings, indent=2) + "\n")
    if path.exists():
        shutil.copymode(path, temporary)
    os.replace(temporary, path)
    return backup if backup.exists() else path


@cli.command(epilog="""\b
Examples:
  codeoid allow 'Bash(pytest:*)'            asks, then adds the rule to ~/.claude/settings.json
  codeoid allow 'Bash(npm test:*)' --yes --scope local""")
@click.argument("rule")
@click.option("--scope", type=click.Choice(SCOPES), default="user", show_default=True,
              help="Which settings file: yours (user), the project's shared one, or the project's local one.")
@click.option("--yes", is_flag=True, help="Add it without asking.")
def allow(rule: str, scope: str, yes: bool) -> None:
    """Allow a command so codeoid can compress it.

    Claude Code then runs RULE's commands unasked, and codeoid compresses their output, failures included.

    `codeoid discover` names the allow rules that would let codeoid compress most of the window. This adds one to
    Claude Code's settings, on your word: codeoid never widens permissions by itself. A backup of the settings
    file is kept beside it; a rule already there is left as it is.
    """
    try:
        rule = validate_rule(rule)
    except BadRule as error:
        raise click.BadParameter(str(error), param_hint="RULE") from None
    path = settings_path(scope, os.getcwd(), os.environ)
    current = _read_allow(path)
    if rule in current:
        click.echo(f"{rule} is already allowed in {path}; nothing changed.")
        return
    click.echo(f"This lets Claude Code run every command matching {rule} without asking you, in every session "
               f"that reads {path}.")
    if not yes and not click.confirm("Add it?", default=False):
        click.echo("Nothing changed.")
        return
    try:
        backup = add_allow_rule(path, rule)
    except (ValueError, OSError) as error:
        raise click.ClickException(f"could not update {path}: {error}") from None
    saved = f"; the previous file is kept as {backup}" if backup is not None and backup != path else ""
    click.echo(f"Added {rule} to {path}{saved}.")


def _read_allow(path: Path) -> list[object]:
    if not path.exists():
        return []
    try:
        settings = json.loads(path.read_text())
    except (ValueError, OSError) as error:
        raise click.ClickException(f"cannot read {path}: {error}") from None
    permissions = settings.get("permissions") if isinstance(settings, dict) else None
    allow_list = permissions.get("allow") if isinstance(permissions, dict) else None
    return allow_list if isinstance(allow_list, list) else []
