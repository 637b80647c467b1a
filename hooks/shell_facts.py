"""What the Bash rewrite must know about a command beyond what rule matching reads.

`codeoid.compressors.command.parse` answers the rule engine's questions (which program's output is printed last,
is it backgrounded or redirected). The rewrite also needs the command words as written, before launchers are
stripped (`exec pytest` is an `exec`), the options given to `set`, and, for the permission check, the text of
every simple command the way Claude Code's rules are matched against it. Same parse of the same command
(`syntax_tree` keeps it), walked for other questions.
"""

from __future__ import annotations

from codeoid.compressors.command import syntax_tree, unescape
from codeoid.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    import tree_sitter


class SimpleCommand(NamedTuple):
    """One simple command: its text as permission rules are matched against it, and its words.

    `words` is None unless every word is a plain literal: no expansion, no backslash, no unquoted glob, brace or
    tilde, no `VAR=value` prefix. Only then does the text say exactly which paths the command reads.
    """

    text: str
    words: tuple[str, ...] | None


class ShellFacts(NamedTuple):
    understood: bool
    # Every command word whose value is known without running anything, unquoted, anywhere in the command
    # (inside substitutions, subshells and function bodies too).
    command_names: tuple[str, ...]
    # Some command word is computed (`$cmd args`, `"$(which x)" args`): it could be anything.
    computed_command: bool
    # The arguments of every `set` invocation.
    set_arguments: tuple[str, ...]
    # The names of the functions the command defines.
    functions: tuple[str, ...]
    # Each simple command when the whole command is only simple commands joined by `;`, `&&`, `||`, `|` or
    # newlines, with no substitution and no redirection but `2>&1` or `2>/dev/null`; else None (a shape whose
    # permission this module cannot judge).
    simple_commands: tuple[SimpleCommand, ...] | None


_NOT_UNDERSTOOD = ShellFacts(False, (), True, (), (), None)
# Redirections that neither move stdout nor touch a file.
_HARMLESS_REDIRECTS = frozenset({"2>&1", "2>/dev/null"})
# Characters that make bash expand an unquoted word (globs, braces, parameters) or that need unescaping; a tilde
# is judged by where it stands (`_expands_tilde`).
_EXPANDING = frozenset("*?[]{}$`\\")


def read(command: str) -> ShellFacts:
    """The facts of `command`; a command the parser reports an error in is `understood=False`."""
    source = command.encode("utf-8", "surrogateescape")
    try:
        root = syntax_tree(source).root_node
    except ValueError:
        return _NOT_UNDERSTOOD
    if root.has_error:
        return _NOT_UNDERSTOOD
    names: list[str] = []
    computed = False
    set_arguments: list[str] = []
    functions: list[str] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "command":
            name_node = node.child_by_field_name("name")
            name = _static_word(name_node) if name_node is not None else None
            if name is None:
                computed = computed or name_node is not None
            else:
                names.append(name)
                if name == "set":
                    set_arguments.extend(_static_word(arg) or "?" for arg in node.children_by_field_name("argument"))
        elif node.type == "function_definition":
            function_name = node.child_by_field_name("name")
            functions.append(_raw(function_name) if function_name is not None else "")
        stack.extend(node.children)
    return ShellFacts(True, tuple(names), computed, tuple(set_arguments), tuple(functions),
                      _simple_commands(root, source))


def _simple_commands(root: tree_sitter.Node, source: bytes) -> tuple[SimpleCommand, ...] | None:
    found: list[SimpleCommand] = []
    pending = [child for child in root.named_children if child.type != "comment"]
    while pending:
        node = pending.pop(0)
        if node.type in ("list", "pipeline"):
            pending[:0] = node.named_children
        elif node.type == "command" and not _has_substitution(node):
            found.append(SimpleCommand(_text(node, source), _literal_words(node)))
        elif node.type == "redirected_statement" and _only_harmless_redirects(node, source):
            body = node.child_by_field_name("body")
            if body is None or body.type != "command" or _has_substitution(body):
                return None
            found.append(SimpleCommand(_text(node, source), _literal_words(body)))
        else:
            return None
    return tuple(found)


def _literal_words(command: tree_sitter.Node) -> tuple[str, ...] | None:
    """The command's words when each is a plain literal (see `SimpleCommand`), else None."""
    words: list[str] = []
    for child in command.named_children:
        if child.type == "command_name":
            child = child.named_children[0] if child.named_child_count == 1 else child
        word = _literal(child)
        if word is None:
            return None
        words.append(word)
    return tuple(words) if words else None


def _literal(node: tree_sitter.Node) -> str | None:
    kind = node.type
    if kind in ("word", "number"):
        text = _raw(node)
        return None if _EXPANDING.intersection(text) or _expands_tilde(text) else text
    if kind == "raw_string":
        return _raw(node)[1:-1]
    if kind == "string":
        if all(child.type == "string_content" for child in node.named_children):
            text = "".join(_raw(child) for child in node.named_children)
            return None if _EXPANDING.intersection(text) else text
        return None
    if kind == "concatenation":
        parts = [_literal(child) for child in node.named_children]
        return None if not parts or None in parts else "".join(part for part in parts if part is not None)
    return None


def _expands_tilde(word: str) -> bool:
    """Whether bash may expand a tilde in this unquoted word: at its start, or after `=` or `:` (bash expands
    `--prefix=~/x` too). `HEAD~1` stays as written."""
    return any(character == "~" and (index == 0 or word[index - 1] in "=:") for index, character in enumerate(word))


def _only_harmless_redirects(node: tree_sitter.Node, source: bytes) -> bool:
    redirects = node.children_by_field_name("redirect")
    return bool(redirects) and all(
        redirect.type == "file_redirect" and "".join(_text(redirect, source).split()) in _HARMLESS_REDIRECTS
        for redirect in redirects
    )


def _has_substitution(node: tree_sitter.Node) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("command_substitution", "process_substitution"):
            return True
        stack.extend(current.children)
    return False


def _static_word(node: tree_sitter.Node) -> str | None:
    """A word's value once quotes and backslashes are gone; None when it holds an expansion."""
    kind = node.type
    if kind in ("command_name", "concatenation"):
        parts = [_static_word(child) for child in node.named_children]
        if not parts:
            return unescape(_raw(node))
        return None if None in parts else "".join(part for part in parts if part is not None)
    if kind in ("word", "number"):
        return unescape(_raw(node))
    if kind == "raw_string":
        return _raw(node)[1:-1]
    if kind == "string":
        contents = node.named_children
        if all(child.type == "string_content" for child in contents):
            return "".join(unescape(_raw(child), quoted=True) for child in contents)
    return None


def _raw(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


def _text(node: tree_sitter.Node, source: bytes) -> str:
    return source[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")
