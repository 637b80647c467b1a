"""`class Point(NamedTuple): x: int; y: int = 0` without importing `typing`.

The PreToolUse rewrite runs before every Bash call and its records (`Rules`, `ShellFacts`, `Invocation`, `Rule`...)
are plain named tuples; `typing` alone (with the `contextlib` it pulls in) cost it about 4 ms of start-up, and
`typing.NamedTuple` compiles a `ForwardRef` for every string annotation besides. This builds the same class the
way `typing.NamedTuple` does (`collections.namedtuple`, the annotated fields in order, their defaults, and every
other name of the class body set on it), and type checkers read the real `typing.NamedTuple`.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    from collections import namedtuple as _namedtuple

    # As in typing: names a class body may not define, and names that are not copied onto the class.
    _PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                             "_make", "_replace", "_asdict", "_source"})
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _NamedTupleMeta(type):
        def __new__(mcls, name, bases, namespace):  # noqa: N804 - the metaclass convention
            if not bases:
                return super().__new__(mcls, name, bases, namespace)  # `NamedTuple` itself
            if bases != (NamedTuple,):
                raise TypeError("can only inherit from a NamedTuple type and Generic")
            annotations = namespace.get("__annotations__", {})
            fields = tuple(annotations)
            defaulted = [field for field in fields if field in namespace]
            for field in fields[len(fields) - len(defaulted):]:
                if field not in namespace:
                    raise TypeError(f"Non-default namedtuple field {field} cannot follow a default field")
            defaults = [namespace[field] for field in defaulted]
            record = _namedtuple(name, fields, defaults=defaults, module=namespace["__module__"])
            record.__annotations__ = record.__new__.__annotations__ = dict(annotations)
            for key, value in namespace.items():
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _SPECIAL and key not in fields:
                    setattr(record, key, value)
            return record

    class NamedTuple(metaclass=_NamedTupleMeta):
        """Base of a record class; the class statement makes a `collections.namedtuple` instead."""
