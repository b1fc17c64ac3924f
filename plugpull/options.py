"""Options that take one value, given once. argparse keeps the last of an option given twice,
silently (`scheduler --port 0 --port 1`); `Once` stores the value as argparse's `store`,
`store_const`, `store_true` and `store_false` do, and notes the option in the namespace, so
that a repeat is refused after parsing (`refuse_repeats`). Public argparse API only."""

import argparse

from plugpull.errors import UsageError

GIVEN = "given"  # the namespace's list of the dests given, once per time given, in order

# argparse's single-value actions by name -> what `Once` needs beside them: nargs and const
_FLAGS = {"store_true": True, "store_false": False}


class Once(argparse.Action):
    """Stores the value (or `const`, with nargs=0) and notes the dest in `namespace.given`."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)
        setattr(namespace, GIVEN, [*getattr(namespace, GIVEN, []), self.dest])


def as_once(kwargs: dict) -> dict:
    """`add_argument`'s keywords for an option, with argparse's single-value actions made
    `Once`; other actions (append, count, help...) as they were."""
    action = kwargs.get("action", "store")
    if action == "store":
        return {**kwargs, "action": Once}
    if action == "store_const":
        return {**kwargs, "action": Once, "nargs": 0}
    if action in _FLAGS:
        value = _FLAGS[action]
        return {**kwargs, "action": Once, "nargs": 0, "const": value, "default": kwargs.get("default", not value)}
    return kwargs


def given(args) -> list[str]:
    """The dests of the `Once` options the command line gave, once per time given."""
    return getattr(args, GIVEN, [])


def refuse_repeats(actions, args) -> None:
    """A UsageError naming the first of `actions` (in their order) given twice."""
    for action in actions:
        if isinstance(action, Once) and action.option_strings and given(args).count(action.dest) > 1:
            raise UsageError(f"{action.option_strings[-1]} is given twice: give it once")
