"""`codeoid`: install into Claude Code, check the installation, and read what the store holds.

Thin commands over library functions: options are parsed and results printed here, the work lives in
`codeoid.setup.install`, `codeoid.setup.doctor` and `codeoid.store`. Every read command can print JSON with every
field and the episode text whole. One module a command group (`installation`, `history`, `privacy`, `running`,
`discover`, `allow`, `viewer`), each adding its commands to the group in `group`; modules that load the vector
stack, the supervisor, fork or the viewer do so inside the command that needs them, so `codeoid --version` and the
status line stay fast.

The CLI is an entry point: nothing in codeoid imports it.
"""

from codeoid.cli import (  # noqa: F401  (each registers its commands)
    allow,
    discover,
    history,
    installation,
    privacy,
    retention,
    running,
    viewer,
)
from codeoid.cli.group import cli


def main() -> None:
    cli()
