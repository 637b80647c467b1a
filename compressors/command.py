"""What a shell command runs, read with a real bash parser (tree-sitter-bash, pinned in pyproject).

Two callers need one parse of a Bash tool command: rule matching wants the program invocation whose stdout we
compress (DESIGN §5: after `VAR=x` prefixes, launchers such as `python -m` or `uv run`, and for a pipeline or a
`&&`/`;` chain its last stage); the PreToolUse rewrite wants to know what it must not wrap (a background `&`,
stdout already redirected, `exit`, syntax the parser does not understand). `parse` answers both and never raises:
a command it cannot read is `understood=False` with no invocation, so the caller passes it through.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys

from codeoid.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

    import tree_sitter


def _tree_sitter() -> ModuleType:
    """The `tree_sitter` bindings (its `Parser`, `Language`...): the compiled `tree_sitter._binding`, loaded
    without the package's `__init__`, which imports `typing` only to define a Protocol, about 4 ms of every
    rewritten Bash call. The module is registered under its own name, so a later `import tree_sitter` runs its
    `__init__` on this very module and every class stays the same object. The package import is the fallback."""
    loaded = sys.modules.get("tree_sitter._binding")
    if loaded is not None:
        return loaded
    package = importlib.machinery.PathFinder.find_spec("tree_sitter")
    locations = package.submodule_search_locations if package is not None else None
    spec = importlib.machinery.PathFinder.find_spec("tree_sitter._binding", locations) if locations else None
    if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
        import tree_sitter

        return tree_sitter
    binding = spec.loader.create_module(spec)
    sys.modules[spec.name] = binding
    try:
        spec.loader.exec_module(binding)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return binding


if TYPE_CHECKING:
    import tree_sitter as _TREE_SITTER
else:
    _TREE_SITTER = _tree_sitter()


def _bash_language() -> tree_sitter.Language:
    """The grammar from tree-sitter-bash's compiled binding, loaded without running the package's `__init__`,
    which imports `importlib.resources` (and with it tempfile, shutil, weakref...) for a highlight query we never
    use: a third of the rewrite hook's start-up. The package import stays as the fallback."""
    package = importlib.machinery.PathFinder.find_spec("tree_sitter_bash")
    locations = package.submodule_search_locations if package is not None else None
    spec = importlib.machinery.PathFinder.find_spec("tree_sitter_bash._binding", locations) if locations else None
    if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
        import tree_sitter_bash

        return _TREE_SITTER.Language(tree_sitter_bash.language())
    binding = spec.loader.create_module(spec)
    spec.loader.exec_module(binding)
    return _TREE_SITTER.Language(binding.language())


PARSER = _TREE_SITTER.Parser(_bash_language())
_last_tree: tuple[bytes, tree_sitter.Tree] | None = None


def syntax_tree(source: bytes) -> tree_sitter.Tree:
    """The parse of `source`, kept for the next caller (the rewrite hook reads one command twice: rule matching
    here, its safety facts in `codeoid.hooks.shell_facts`). Raises ValueError as tree-sitter does."""
    global _last_tree
    if _last_tree is None or _last_tree[0] != source:
        _last_tree = (source, PARSER.parse(source))
    return _last_tree[1]

# Node types that are statements: what a pipeline stage, a list operand or a heredoc continuation can be.
_STATEMENTS = frozenset({
    "command", "pipeline", "list", "redirected_statement", "negated_command", "subshell", "compound_statement",
    "for_statement", "c_style_for_statement", "while_statement", "if_statement", "case_statement",
    "function_definition", "test_command", "declaration_command", "unset_command", "variable_assignment",
    "variable_assignments",
})
_COMPOUND = frozenset({
    "compound_statement", "for_statement", "c_style_for_statement", "while_statement", "if_statement",
    "case_statement", "test_command",
})
# `>&2` and `>&-` move stdout; `>&1` and `2>&1` leave it where it is.
_STDOUT_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", ">&-"})


class Invocation(NamedTuple):
    """One program run: `program` is the basename of the command word once prefixes and launchers are gone."""

    program: str
    args: tuple[str, ...]
    # The launchers that were stripped, outermost first, e.g. ("uv run", "python -m").
    launchers: tuple[str, ...] = ()


class ShellCommand(NamedTuple):
    """One parse of a command line: the invocation rules match on, and the facts a rewrite must respect."""

    source: str
    # False when the parser reported a syntax error: then nothing below is trustworthy and `invocation` is None.
    understood: bool
    # The last stage's program, or None when the command does not end in one (a subshell, a loop, a function...).
    invocation: Invocation | None
    # Every simple command's program (launchers stripped, else its command word) in source order, including those
    # inside substitutions, subshells and function bodies.
    programs: tuple[str, ...]
    background: bool  # a `&` terminator anywhere
    stdout_redirected: bool  # some redirection sends fd 1 elsewhere (`> f`, `>> f`, `&> f`, `>&2`, `1> f`)
    heredoc: bool  # `<<` or `<<<`
    calls_exit: bool  # `exit` or `logout` is run somewhere (the shell, not the pipe, would lose stdout)
    defines_function: bool
    subshell: bool  # `( ... )`
    substitution: bool  # `$(...)`, backquotes, `<(...)` or `>(...)`
    compound: bool  # `{ ...; }`, loops, if/case, `[ ]`/`[[ ]]`
    # Some redirection sends fd 1 somewhere other than stderr (`> f`, `1> f`, `&> f`; not `>&2`): under the rewrite,
    # which sends stderr through the compressor too, only these take output away from it.
    stdout_leaves: bool


def parse(command: str) -> ShellCommand:
    """Parse `command` as bash; never raises."""
    try:
        root = syntax_tree(command.encode("utf-8", "surrogateescape")).root_node
    except (ValueError, UnicodeError):
        return ShellCommand(command, False, None, (), False, False, False, False, False, False, False, False, False)
    facts = _Facts()
    facts.visit(root)
    understood = not root.has_error
    invocation = _resolve_statement(_last_statement(root)) if understood else None
    if invocation is not None and invocation.program in facts.functions:
        invocation = None  # a function defined in the command itself: its output is anybody's
    return ShellCommand(
        source=command,
        understood=understood,
        invocation=invocation,
        programs=tuple(facts.programs),
        background=facts.background,
        stdout_redirected=facts.stdout_redirected,
        heredoc=facts.heredoc,
        calls_exit=bool({"exit", "logout"} & set(facts.programs)),
        defines_function=facts.defines_function,
        subshell=facts.subshell,
        substitution=facts.substitution,
        compound=facts.compound,
        stdout_leaves=facts.stdout_leaves,
    )


def resolve(command: str) -> Invocation | None:
    """The program invocation whose output `command` prints last, or None when there is no single one."""
    return parse(command).invocation


class _Facts:
    """One walk over the syntax tree collecting what the rewrite must know."""

    def __init__(self) -> None:
        self.programs: list[str] = []
        self.background = False
        self.stdout_redirected = False
        self.stdout_leaves = False
        self.heredoc = False
        self.defines_function = False
        self.functions: set[str] = set()
        self.subshell = False
        self.substitution = False
        self.compound = False

    def visit(self, node: tree_sitter.Node) -> None:
        stack = [node]
        while stack:
            current = stack.pop()
            kind = current.type
            if kind == "&" and not current.is_named:
                self.background = True
            elif kind == "command":
                self.programs.append(_program_of(current))
            elif kind == "file_redirect":
                if _redirects_stdout(current):
                    self.stdout_redirected = True
                    self.stdout_leaves = self.stdout_leaves or not _to_stderr(current)
            elif kind in ("heredoc_redirect", "herestring_redirect"):
                self.heredoc = True
            elif kind == "function_definition":
                self.defines_function = True
                name = current.child_by_field_name("name")
                if name is not None:
                    self.functions.add(_text(name))
            elif kind == "subshell":
                self.subshell = True
            elif kind in ("command_substitution", "process_substitution"):
                self.substitution = True
            elif kind in _COMPOUND:
                self.compound = True
            stack.extend(reversed(current.children))


def _program_of(command: tree_sitter.Node) -> str:
    invocation = _invocation(command)
    if invocation is not None:
        return invocation.program
    name = command.child_by_field_name("name")
    return "" if name is None else _text(name)


def _redirects_stdout(redirect: tree_sitter.Node) -> bool:
    descriptor = redirect.child_by_field_name("descriptor")
    if descriptor is not None and _text(descriptor) != "1":
        return False
    operator = next((child.type for child in redirect.children if not child.is_named), "")
    if operator not in _STDOUT_OPERATORS:
        return False
    destination = redirect.child_by_field_name("destination")
    return not (operator == ">&" and destination is not None and _text(destination) == "1")


def _to_stderr(redirect: tree_sitter.Node) -> bool:
    """`>&2` or `1>&2`."""
    operator = next((child.type for child in redirect.children if not child.is_named), "")
    destination = redirect.child_by_field_name("destination")
    return operator == ">&" and destination is not None and _text(destination) == "2"


def _last_statement(root: tree_sitter.Node) -> tree_sitter.Node | None:
    """The program's last statement, or None when it runs in the background (its output is not ours to wait on)."""
    children = [child for child in root.children if child.type != "comment"]
    for index in range(len(children) - 1, -1, -1):
        child = children[index]
        if child.type in _STATEMENTS:
            backgrounded = any(later.type == "&" for later in children[index + 1:])
            return None if backgrounded else child
    return None


def _resolve_statement(node: tree_sitter.Node | None) -> Invocation | None:
    """Descend to the last stage: the right operand of a list, the last command of a pipeline."""
    while node is not None:
        kind = node.type
        if kind == "command":
            return _invocation(node)
        if kind in ("list", "pipeline", "negated_command"):
            node = _last_named_statement(node)
        elif kind == "redirected_statement":
            # tree-sitter-bash hangs whatever follows a heredoc (`cat <<EOF | grep x`) under the heredoc redirect.
            continuation = None
            for redirect in node.children_by_field_name("redirect"):
                if redirect.type == "heredoc_redirect":
                    continuation = _last_named_statement(redirect) or continuation
            node = continuation or node.child_by_field_name("body")
        else:
            return None
    return None


def _last_named_statement(node: tree_sitter.Node) -> tree_sitter.Node | None:
    for child in reversed(node.named_children):
        if child.type in _STATEMENTS:
            return child
    return None


def _invocation(command: tree_sitter.Node) -> Invocation | None:
    name = command.child_by_field_name("name")
    if name is None:
        return None
    words = [_word_text(name)]
    words.extend(_word_text(argument) for argument in command.children_by_field_name("argument"))
    if not words[0][1]:
        return None
    return _strip_launchers([text for text, _static in words])


def _word_text(node: tree_sitter.Node) -> tuple[str, bool]:
    """A word's value once quotes and escapes are gone, and whether it is static (no expansion inside)."""
    kind = node.type
    if kind in ("command_name", "concatenation"):
        parts = [_word_text(child) for child in node.named_children] or [(_text(node), True)]
        return "".join(text for text, _ in parts), all(static for _, static in parts)
    if kind == "word":
        return unescape(_text(node)), True
    if kind == "number":
        return _text(node), True
    if kind == "raw_string":
        return _text(node)[1:-1], True
    if kind == "string":
        contents = node.named_children
        if all(child.type == "string_content" for child in contents):
            return "".join(unescape(_text(child), quoted=True) for child in contents), True
    return _text(node), False


def unescape(text: str, *, quoted: bool = False) -> str:
    """A bash word's backslash escapes removed, as bash does: inside double quotes only before $ ` " \\ and a
    newline. Shared with `codeoid.hooks.shell_facts`, which reads the same words for the rewrite's checks."""
    if "\\" not in text:
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and (not quoted or text[index + 1] in '$`"\\\n'):
            out.append(text[index + 1])
            index += 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


# Launchers: a program that runs another program given later on its command line. Each entry says which of its
# options take a value, so the value is not mistaken for the program.
class _Launcher(NamedTuple):
    label: str
    options_with_value: frozenset[str]
    # Options after which there is no program to find (`python -c CODE`, `npx -c CMD`).
    options_without_program: frozenset[str] = frozenset()


_PREFIX_LAUNCHERS: dict[str, _Launcher] = {
    "env": _Launcher("env", frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"})),
    "time": _Launcher("time", frozenset({"-f", "--format", "-o", "--output"})),
    "nice": _Launcher("nice", frozenset({"-n", "--adjustment"})),
    "nohup": _Launcher("nohup", frozenset()),
    "stdbuf": _Launcher("stdbuf", frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})),
    "command": _Launcher("command", frozenset()),
    "exec": _Launcher("exec", frozenset({"-a"})),
    "xargs": _Launcher("xargs", frozenset({
        "-a", "--arg-file", "-d", "--delimiter", "-E", "-e", "-I", "-i", "-L", "-l", "-n", "--max-args",
        "-P", "--max-procs", "-s", "--max-chars",
    })),
    "timeout": _Launcher("timeout", frozenset({"-s", "--signal", "-k", "--kill-after"})),
    "npx": _Launcher("npx", frozenset({"-p", "--package"}), frozenset({"-c", "--call"})),
    "pnpx": _Launcher("pnpx", frozenset({"-p", "--package"}), frozenset({"-c"})),
    "bunx": _Launcher("bunx", frozenset({"-p", "--package"})),
    "uvx": _Launcher("uvx", frozenset({"--from", "--with", "-p", "--python", "--index", "--index-url"})),
}
# `uv run X`, `poetry run X`: the launcher is a program plus one subcommand word.
_SUBCOMMAND_LAUNCHERS: dict[tuple[str, str], _Launcher] = {
    ("uv", "run"): _Launcher("uv run", frozenset({
        "--with", "--with-editable", "--with-requirements", "-p", "--python", "--project", "--directory",
        "--package", "--extra", "--group", "--only-group", "--env-file", "--index", "--index-url",
        "--default-index", "--extra-index-url", "-f", "--find-links",
    }), frozenset({"-m", "--module", "-s", "--script"})),
    ("poetry", "run"): _Launcher("poetry run", frozenset({"-C", "--directory", "-P", "--project"})),
    ("pipenv", "run"): _Launcher("pipenv run", frozenset()),
    ("pdm", "run"): _Launcher("pdm run", frozenset({"-p", "--project"})),
    ("hatch", "run"): _Launcher("hatch run", frozenset()),
    ("rye", "run"): _Launcher("rye run", frozenset()),
    ("pixi", "run"): _Launcher("pixi run", frozenset({"-e", "--environment", "--manifest-path"})),
    ("conda", "run"): _Launcher("conda run", frozenset({"-n", "--name", "-p", "--prefix"})),
    ("pnpm", "exec"): _Launcher("pnpm exec", frozenset()),
    ("pnpm", "dlx"): _Launcher("pnpm dlx", frozenset({"--package"})),
    ("yarn", "exec"): _Launcher("yarn exec", frozenset()),
    ("yarn", "dlx"): _Launcher("yarn dlx", frozenset({"-p", "--package"})),
    ("npm", "exec"): _Launcher("npm exec", frozenset({"-p", "--package"}), frozenset({"-c", "--call"})),
    ("bun", "x"): _Launcher("bun x", frozenset()),
    ("bundle", "exec"): _Launcher("bundle exec", frozenset()),
}
# The interpreter's own options before `-m MODULE`; with `-c` or a script there is no module to name.
_PYTHON_OPTIONS_WITH_VALUE = frozenset({"-W", "-X", "--check-hash-based-pycs"})


def _strip_launchers(words: list[str]) -> Invocation | None:
    launchers: list[str] = []
    while words:
        program = os.path.basename(words[0])
        if _is_python(program):
            module = _python_module(words[1:])
            if module is None:
                break
            launchers.append("python -m")
            words = module
            continue
        launcher = _PREFIX_LAUNCHERS.get(program)
        rest_start = 1
        if launcher is None and len(words) > 1:
            launcher = _SUBCOMMAND_LAUNCHERS.get((program, words[1]))
            rest_start = 2
        if launcher is None:
            break
        rest = _skip_options(words[rest_start:], launcher, skip_assignments=program == "env")
        if rest is None:
            return None
        if not rest:
            break
        launchers.append(launcher.label)
        words = rest
    if not words:
        return None
    return Invocation(os.path.basename(words[0]), tuple(words[1:]), tuple(launchers))


def _skip_options(words: list[str], launcher: _Launcher, *, skip_assignments: bool) -> list[str] | None:
    """The words from the launched program on; None when the launcher runs inline code instead of a program."""
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            return words[index + 1:]
        if word in launcher.options_without_program:
            return None
        if word.startswith("-") and word != "-":
            index += 2 if word in launcher.options_with_value else 1
        elif skip_assignments and "=" in word and not word.startswith("="):
            index += 1
        elif launcher.label == "timeout":
            return words[index + 1:]  # the first operand is the duration
        else:
            return words[index:]
    return words[index:]


def _is_python(program: str) -> bool:
    name = program.removesuffix(".exe")
    if name.startswith("pypy"):
        name = name[4:]
    elif name.startswith("python"):
        name = name[6:]
    else:
        return False
    return all(char.isdigit() or char == "." for char in name)


def _python_module(args: list[str]) -> list[str] | None:
    """For `python [opts] -m MOD ARGS`, the words MOD ARGS; None for a script, `-c` or a bare interpreter."""
    index = 0
    while index < len(args):
        word = args[index]
        if word == "-m":
            return args[index + 1:] or None
        if word.startswith("-m") and not word.startswith("--"):
            return [word[2:], *args[index + 1:]]
        if word in _PYTHON_OPTIONS_WITH_VALUE:
            index += 2
        elif word.startswith("-") and not word.startswith("-c"):
            index += 1
        else:
            return None
    return None
