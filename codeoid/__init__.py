"""codeoid: every turn of a Claude Code session kept verbatim, paged back on demand.

Kept empty of imports on purpose: hook processes import `codeoid.hooks.main` and pay for every module
this package pulls in at start-up.
"""

__version__ = "0.1.0"
