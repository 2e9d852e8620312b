"""Spec keys as data: what each key holds, checked wherever the key appears and written out as JSON Schema.

A spec's shape is a tree of these (`harness.spec_keys` builds it): a `Section`
is a mapping with a fixed set of keys, `MapOf` a mapping with free names,
`ListOf` a list, `Scalar` a number, string or boolean with its bounds or
choices, `AnyOf` the first of several shapes that fits, `Custom` a shape whose
owner checks it (the nemesis schedule). Each knows how to `check` a value at a
key path (raising `SpecError("<path>: ...")`, one line) and how to describe
itself as JSON Schema (`schema`) and in words (`type_text`), so the validator,
the schema for editors and the reference in docs/spec.md cannot drift apart.

Must never: decide what a key means to a run, or check one key against another
(`harness.spec` does both, after the types hold).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from testbed.errors import SpecError

NO_DEFAULT: Any = object()
JsonSchema = dict[str, Any]
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,), "number": (int, float), "string": (str,), "boolean": (bool,),
}
_WORDS = {"integer": "an integer", "number": "a number", "string": "a string", "boolean": "true or false"}


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def fail(path: str, problem: str) -> SpecError:
    return SpecError(f"{path}: {problem}")


def _is(value: Any, json_type: str) -> bool:
    if isinstance(value, bool) and json_type != "boolean":
        return False  # YAML's true is no number
    return isinstance(value, _PY_TYPES[json_type])


class Key:
    """One key's shape. `doc` says what it means; `default` is what an absent key stands for."""

    doc: str = ""
    default: Any = NO_DEFAULT
    ref: str | None = None  # a name in the schema's $defs, for shapes used in several places

    def check(self, path: str, value: Any) -> None:
        raise NotImplementedError

    def own_schema(self, defs: dict[str, JsonSchema]) -> JsonSchema:
        raise NotImplementedError

    def type_text(self) -> str:
        raise NotImplementedError

    def schema(self, defs: dict[str, JsonSchema]) -> JsonSchema:
        """This shape as JSON Schema; a shape with a `ref` goes into `defs` once and is referred to."""
        if self.ref is None:
            return self._described(self.own_schema(defs))
        if self.ref not in defs:
            defs[self.ref] = {}  # a placeholder first, so a recursive shape terminates
            defs[self.ref] = self._described(self.own_schema(defs))
        return {"$ref": f"#/$defs/{self.ref}"}

    def _described(self, schema: JsonSchema) -> JsonSchema:
        if self.doc:
            schema = {"description": self.doc, **schema}
        if self.default is not NO_DEFAULT and self.default is not None:
            schema["default"] = self.default
        return schema


@dataclass
class Scalar(Key):
    """A number, string or boolean; `choices` (named `what` in errors), bounds and a `pattern` narrow it."""

    types: tuple[str, ...]
    doc: str = ""
    default: Any = NO_DEFAULT
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()
    what: str | None = None  # "unknown runtime 'x' (known: ...)" instead of "must be one of ..."
    pattern: str | None = None
    pattern_text: str = ""
    ref: str | None = None

    def check(self, path: str, value: Any) -> None:
        if not any(_is(value, t) for t in self.types):
            raise fail(path, f"must be {self.type_text()}, got {value!r}")
        if self.choices and value not in self.choices:
            known = ", ".join(str(c) for c in self.choices)
            if self.what:
                raise fail(path, f"unknown {self.what} {value!r} (known: {known})")
            raise fail(path, f"must be one of {known}, got {value!r}")
        if self.low is not None and value < self.low:
            raise fail(path, f"must be >= {_num(self.low)}, got {value!r}")
        if self.high is not None and value > self.high:
            raise fail(path, f"must be <= {_num(self.high)}, got {value!r}")
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise fail(path, f"must be {self.pattern_text or 'like ' + self.pattern}, got {value!r}")

    def own_schema(self, defs: dict[str, JsonSchema]) -> JsonSchema:
        schema: JsonSchema = {"type": self.types[0] if len(self.types) == 1 else list(self.types)}
        if self.choices:
            schema["enum"] = list(self.choices)
        if self.low is not None:
            schema["minimum"] = self.low
        if self.high is not None:
            schema["maximum"] = self.high
        if self.pattern is not None:
            schema["pattern"] = f"^(?:{self.pattern})$"
        return schema

    def type_text(self) -> str:
        if self.pattern_text:
            return self.pattern_text
        if self.choices:
            return "one of " + ", ".join(f"`{c}`" for c in self.choices)
        text = " or ".join(_WORDS[t] for t in self.types)
        if self.low is not None and self.high is not None:
            return f"{text} in {_num(self.low)}..{_num(self.high)}"
        if self.low is not None:
            return f"{text} >= {_num(self.low)}"
        return text


def Int(doc: str, default: Any = NO_DEFAULT, low: float | None = None, high: float | None = None) -> Scalar:
    return Scalar(("integer",), doc, default, low, high)


def Num(doc: str, default: Any = NO_DEFAULT, low: float | None = None, high: float | None = None) -> Scalar:
    return Scalar(("number",), doc, default, low, high)


def Str(doc: str, default: Any = NO_DEFAULT) -> Scalar:
    return Scalar(("string",), doc, default)


def Bool(doc: str, default: Any = NO_DEFAULT) -> Scalar:
    return Scalar(("boolean",), doc, default)


def Choice(choices: tuple[Any, ...], doc: str = "", default: Any = NO_DEFAULT, what: str | None = None) -> Scalar:
    types = tuple(sorted({"integer" if isinstance(c, int) else "string" for c in choices}))
    return Scalar(types, doc, default, choices=choices, what=what)


SETTING_VALUE = Scalar(("string", "number", "boolean"), "a value as the client or broker takes it")


@dataclass
class ListOf(Key):
    """A list of `item`s; `one_for_list` lets a single item stand for a list of one."""

    item: Key
    doc: str = ""
    default: Any = NO_DEFAULT
    min_items: int = 0
    one_for_list: bool = False
    ref: str | None = None
    text: str = ""  # says what the list holds better than the generated words

    def check(self, path: str, value: Any) -> None:
        if self.one_for_list and not isinstance(value, list):
            self.item.check(path, value)
            return
        if not isinstance(value, list):
            raise fail(path, f"must be {self.type_text()}, got {value!r}")
        if len(value) < self.min_items:
            raise fail(path, f"must have at least {self.min_items} item(s)")
        for i, item in enumerate(value):
            self.item.check(f"{path}[{i}]", item)

    def own_schema(self, defs: dict[str, JsonSchema]) -> JsonSchema:
        listed: JsonSchema = {"type": "array", "items": self.item.schema(defs)}
        if self.min_items:
            listed["minItems"] = self.min_items
        return {"anyOf": [self.item.schema(defs), listed]} if self.one_for_list else listed

    def type_text(self) -> str:
        text = self.text or f"a list, each {self.item.type_text()}"
        return f"{self.item.type_text()}, or {text}" if self.one_for_list else text


@dataclass
class Section(Key):
    """A mapping with a fixed set of keys, each with its own shape; `title` heads its table in docs/spec.md."""

    keys: dict[str, Key]
    doc: str = ""
    title: str = ""
    required: tuple[str, ...] = ()
    nullable: bool = False  # `key:` with nothing after it stands for an empty mapping
    ref: str | None = None

    def value(self, raw: dict[str, Any], key: str) -> Any:
        """`key`'s value in `raw`, else its default, else None (`raw` was checked against this section already)."""
        default = self.keys[key].default
        return raw.get(key, None if default is NO_DEFAULT else default)

    def check(self, path: str, value: Any) -> None:
        if value is None and self.nullable:
            return
        if not isinstance(value, dict):
            raise fail(path, f"must be a mapping, got {type(value).__name__}")
        for key in value:
            if key not in self.keys:
                raise fail(f"{path}.{key}" if path else str(key),
                           f"unknown key (allowed: {', '.join(sorted(self.keys))})")
        for key in self.required:
            if key not in value:
                raise fail(f"{path}.{key}" if path else key, "required")
        for key, item in value.items():
            self.keys[key].check(f"{path}.{key}" if path else str(key), item)

    def own_schema(self, defs: dict[str, JsonSchema]) -> JsonSchema:
        schema: JsonSchema = {"type": ["object", "null"] if self.nullable else "object",
                              "properties": {k: v.schema(defs) for k, v in self.keys.items()},
                              "additionalProperties": False}
        if self.required:
            schema["required"] = list(self.required)
        return schema

    def type_text(self) -> str:
        return f"a mapping ({self.title})" if self.title else "a mapping"

    def without(self, *names: str, **changes: Any) -> Section:
        """This section less some keys (an override may not rename a spec), as a new section."""
        fields = {"keys": {k: v for k, v in self.keys.items() if k not in names}, "doc": self.doc,
                  "title": self.title, "required": tuple(r for r in self.required if r not in names),
                  "nullable": self.nullable, "ref": self.ref}
        return Section(**{**fields, **changes})


@dataclass
class MapOf(Key):
    """A mapping whose names are free (configuration names, client settings) and whose values share a shape."""

    value: Key
    doc: str = ""
    default: Any = NO_DEFAULT
    what: str = "a mapping"
    ref: str | None = None

    def check(self, path: str, value: Any) -> None:
        if value is None:
            return
        if not isinstance(value, dict):
            raise fail(path, f"must be {self.what}, got {type(value).__name__}")
        for name, item in value.items():
            if not isinstance(name, str):
                raise fail(f"{path}.{name}", f"names must be strings, got {name!r}")
            self.value.check(f"{path}.{name}", item)

    def own_schema(self, defs: dict[str, JsonSchema]) -> JsonSchema:
        return {"type": ["object", "null"], "additionalProperties": self.value.schema(defs)}

    def type_text(self) -> str:
        return self.what


@dataclass
class AnyOf(Key):
    """The first of `options` that fits; the error is the last option's (put the most general last)."""

    options: tuple[Key, ...]
    doc: str = ""
    default: Any = NO_DEFAULT
    ref: str | None = None

    def check(self, path: str, value: Any) -> None:
        for option in self.options[:-1]:
            try:
                option.check(path, value)
                return
            except SpecError:
                continue
        self.options[-1].check(path, value)

    def own_schema(self, defs: dict[str, JsonSchema]) -> JsonSchema:
        return {"anyOf": [o.schema(defs) for o in self.options]}

    def type_text(self) -> str:
        return ", or ".join(o.type_text() for o in self.options)


@dataclass
class Custom(Key):
    """A shape its owner checks and describes (the nemesis schedule: `nemesis.schedule` and `nemesis.fault_schema`)."""

    checker: Callable[[str, Any], object]
    json_schema: Callable[[], JsonSchema]
    text: str
    doc: str = ""
    default: Any = NO_DEFAULT
    ref: str | None = None

    def check(self, path: str, value: Any) -> None:
        self.checker(path, value)

    def own_schema(self, defs: dict[str, JsonSchema]) -> JsonSchema:
        return self.json_schema()

    def type_text(self) -> str:
        return self.text
