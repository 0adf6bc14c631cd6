"""A turnlake.toml validation error in the file's own words: one line per problem that names the
key (as `[section] key`) and what is allowed (the models: config/schema.py)."""

from __future__ import annotations

from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from pipelines.config.schema import TurnlakeFile


def problems(error: ValidationError, data: dict[str, Any]) -> list[str]:
    """One line per problem: `[section] key: what is wrong; what is allowed`."""
    return [_problem(e, data) for e in error.errors(include_url=False)]


def _problem(error: Any, data: dict[str, Any]) -> str:
    loc = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        allowed = _fields_at(loc[:-1])
        what = "unknown table" if isinstance(_value_at(data, loc), dict) else "unknown key"
        return f"{_where(data, loc)}: {what}; allowed: {', '.join(allowed) or '(none)'}"
    if error["type"] == "value_error":
        return f"{_where(data, loc)}: {error['ctx']['error']}"
    if error["type"] == "string_pattern_mismatch" and loc[-1:] == ("[key]",):
        return (
            f"[{'.'.join(map(str, loc[:-2]))}] {loc[-2]}: a profile name is lowercase letters, "
            "digits and _, starting with a letter (it names the release config)"
        )
    message = _PLAIN.get(error["type"]) or error["msg"].removeprefix("Input ")
    got = _value_at(data, loc)
    suffix = "" if got is _MISSING else f", got {got!r}"
    return f"{_where(data, loc)}: {message}{suffix}"


_MISSING = object()
# Pydantic's wording for type errors, in the words of a TOML file.
_PLAIN = {
    "bool_type": "should be true or false",
    "int_type": "should be a whole number",
    "float_type": "should be a number",
    "string_type": "should be a string (in quotes)",
    "list_type": "should be a list",
    "dict_type": "should be a table",
    "model_type": "should be a table",
    "string_too_short": "should not be empty",
}


def _value_at(data: Any, loc: tuple) -> Any:
    node = data
    for part in loc:
        in_table = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if not (in_table or in_list):
            return _MISSING
        node = node[part]
    return node


def _where(data: dict[str, Any], loc: tuple) -> str:
    """`[a.b] key` for a key in table a.b, `[a.b]` for the table itself."""
    section, node = [], data
    for i, part in enumerate(loc):
        if isinstance(node, dict) and isinstance(node.get(part), dict):
            section.append(str(part))
            node = node[part]
            continue
        key = str(part) + "".join(f"[{p}]" for p in loc[i + 1 :] if p != "[key]")
        return f"[{'.'.join(section)}] {key}" if section else f"{key} (top level)"
    return f"[{'.'.join(section)}]"


def _fields_at(loc: tuple) -> list[str]:
    model: Any = TurnlakeFile
    keyed = False  # the previous part was a table of named tables ([release.profiles]): skip key
    for part in loc:
        if keyed:
            keyed = False
            continue
        field = model.model_fields.get(part) if isinstance(model, type) else None
        if field is None:
            return []
        candidates = [field.annotation, *get_args(field.annotation)]
        keyed = get_origin(field.annotation) is dict
        model = next(
            (c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None
        )
    return list(model.model_fields) if model else []
