"""The types of the public API's arguments, checked at its entry points before any work: strings are `str`,
counts are `int` (not `bool`, not `float`), flags are `bool`, lists are lists (not a lone string). A wrong type
is one `InterpError` line naming the argument, never a `TypeError` or `AttributeError` from deep inside."""

from __future__ import annotations

import numbers
from typing import Any, Mapping

from interp.errors import InterpError


def text_argument(value: Any, what: str) -> str:
    """A string argument (a query, a response, a task, a name): anything else is one line naming it."""
    if not isinstance(value, str):
        raise InterpError(f"{what} must be a string, not {type(value).__name__} {shown(value)}")
    return value


def text_list(values: Any, what: str) -> list[str]:
    """A list (tuple, any sequence but a string) of strings, one per pair: anything else is one line naming it."""
    if isinstance(values, (str, bytes)) or isinstance(values, Mapping) or not hasattr(values, "__iter__"):
        raise InterpError(
            f"{what} must be a list of strings, one per pair, not {type(values).__name__} {shown(values)} "
            "(for one pair call judge(query, response_a, response_b))"
        )
    listed = list(values)
    for index, value in enumerate(listed):
        text_argument(value, f"{what}[{index}]")
    return listed


def shown(value: Any) -> str:
    """A value as an error message shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- argument types of the public API (`interp.api.runs` checks its arguments with these too) --------------


def check_int(value: Any, what: str, *, minimum: int | None = None, optional: bool = False) -> None:
    """An int argument (not a bool, not a float), at least `minimum`; None too where `optional`."""
    if value is None and optional:
        return
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise InterpError(
            f"{what} must be an int{' or None' if optional else ''}, not {type(value).__name__} {shown(value)}"
        )
    if minimum is not None and value < minimum:
        raise InterpError(f"{what} must be at least {minimum}, not {value}")


def check_number(value: Any, what: str, *, optional: bool = False) -> None:
    """A real-number argument (int or float, not a bool, not a string); None too where `optional`."""
    if value is None and optional:
        return
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise InterpError(
            f"{what} must be a number{' or None' if optional else ''}, not {type(value).__name__} {shown(value)}"
        )


def check_flag(value: Any, what: str) -> None:
    """A True/False argument: a string such as "no" or a number is not silently read as true."""
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise InterpError(f"{what} must be True or False, not {type(value).__name__} {shown(value)}")


def check_text(value: Any, what: str, *, optional: bool = False) -> None:
    """A string argument; None too where `optional`."""
    if value is None and optional:
        return
    text_argument(value, what)


def check_list(value: Any, what: str, *, optional: bool = True, objects: tuple[type, ...] = ()) -> None:
    """A list (tuple, any sequence but a string) of strings, or of strings and instances of `objects` (a
    `Judge` where a judge may be given as one); None too where `optional`."""
    if value is None and optional:
        return
    kinds = " or ".join(["strings", *(f"{kind.__name__} objects" for kind in objects)])
    if isinstance(value, (str, bytes)) or isinstance(value, Mapping) or not hasattr(value, "__iter__"):
        raise InterpError(
            f"{what} must be a list of {kinds}{' or None' if optional else ''}, not {type(value).__name__} "
            f"{shown(value)}"
        )
    for index, entry in enumerate(value):
        if not isinstance(entry, (str, *objects)):
            kind = " or ".join(["a string", *(f"a {kind.__name__}" for kind in objects)])
            raise InterpError(f"{what}[{index}] must be {kind}, not {type(entry).__name__} {shown(entry)}")
