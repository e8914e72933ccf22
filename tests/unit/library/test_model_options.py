"""Every public option of the facade, the routes and the CLI is in the model's docstring.

The model of the library (``tests/model/machine.py``) lists, in its docstring section
"Public options and how the model covers them", every option with the rule that draws
it, or why it is not drawn and the test that covers it instead (issue 38). These tests
introspect the facade (:class:`~dynashard.Dynashard`, its read options, the
:class:`~dynashard.dynamodb.ordered_index.OrderedIndex` it hands out and the fields of
:class:`~dynashard.DynashardConfig`) and the typer app of the CLI (the routes' OpenAPI
document: ``tests/unit/functions/test_routes_in_the_model.py``), and fail when an
option is missing from that section, or when the section names one that no longer
exists: a new option cannot land without entering the model or being listed with its
reason.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

import typer.main

from dynashard import Dynashard, DynashardConfig
from dynashard.cli.app import app as cli_app
from dynashard.dynamodb.ordered_index import OrderedIndex
from dynashard.dynamodb.planned_reader import ReadOptions
from tests.model import machine

SECTION = "Public options and how the model covers them"
#: An entry: ``subject(option, option, ...)`` (a property or a method without options: ``()``).
ENTRY = re.compile(r"``([^`()]+)\(([^`()]*)\)``")

Options = set[tuple[str, str]]


def documented() -> Options:
    """(subject, option) of every entry of the model docstring's section."""
    doc = machine.__doc__ or ""
    assert SECTION in doc, f"the model's docstring has no section {SECTION!r}"
    section = doc.split(SECTION, 1)[1].split("What a pending fix changes", 1)[0]
    found: Options = set()
    for subject, options in ENTRY.findall(section):
        for option in options.split(","):
            found.add((" ".join(subject.split()), option.strip()))
    return found


def _class_options(cls: type, name: str) -> Options:
    """(``Name.method``, parameter) of a class's public methods and properties."""
    found: Options = set()
    for attr, member in inspect.getmembers(cls):
        if attr.startswith("_"):
            continue
        subject = f"{name}.{attr}"
        if isinstance(member, property):
            found.add((subject, ""))
            continue
        if not inspect.isfunction(member):
            continue
        params = [p for p in inspect.signature(member).parameters.values() if p.name != "self"]
        for param in params:
            if param.kind is inspect.Parameter.VAR_KEYWORD:  # **options: Unpack[ReadOptions]
                keys = ReadOptions.__required_keys__ | ReadOptions.__optional_keys__
                found |= {(subject, key) for key in keys}
            else:
                found.add((subject, param.name))
        if not params:
            found.add((subject, ""))
    return found


def facade_options() -> Options:
    """Every public option of the facade, its ordered index and its configuration."""
    found = _class_options(Dynashard, "Dynashard")
    init = inspect.signature(Dynashard.__init__).parameters
    found |= {("Dynashard", p) for p in init if p != "self"}
    found |= _class_options(OrderedIndex, "OrderedIndex")
    found |= {("DynashardConfig", f.name) for f in dataclasses.fields(DynashardConfig)}
    return found


def cli_options() -> Options:
    """(``dynashard [command]``, argument name or first option flag) of the CLI."""
    root: Any = typer.main.get_command(cli_app)

    def of(command: Any, subject: str) -> Options:
        return {
            (subject, p.opts[0] if p.param_type_name == "option" else p.name)
            for p in command.params
        }

    found = of(root, "dynashard")
    for name, command in root.commands.items():
        found |= of(command, f"dynashard {name}")
    return found


def test_every_facade_option_is_drawn_or_listed_with_its_reason() -> None:
    # Given the facade's public methods, their parameters, the read options and the
    # configuration's fields
    actual, listed = facade_options(), documented()
    # Then each is in the model's section, and the section names no option that is gone
    classes = ("Dynashard", "DynashardConfig", "OrderedIndex")
    listed = {e for e in listed if e[0].split(".")[0] in classes}
    missing, stale = sorted(actual - listed), sorted(listed - actual)
    assert not missing, f"options neither drawn by the model nor listed with a reason: {missing}"
    assert not stale, f"options listed in the model's docstring that do not exist: {stale}"


def test_every_cli_option_is_listed_with_its_reason() -> None:
    actual = cli_options()
    listed = {e for e in documented() if e[0].split(" ")[0] == "dynashard"}
    missing, stale = sorted(actual - listed), sorted(listed - actual)
    assert not missing, f"CLI options missing from the model's docstring: {missing}"
    assert not stale, f"CLI options listed in the model's docstring that do not exist: {stale}"


def test_the_check_sees_a_new_option() -> None:
    # Given the facade's options with one that the docstring does not list
    actual = facade_options() | {("Dynashard.query_events", "projection")}
    # Then the check reports it
    assert ("Dynashard.query_events", "projection") in actual - documented()
