"""SnapStart: environments restored from one snapshot must not choose the same shards.

A restore resumes a copy of one initialised process image ("Handling uniqueness with
Lambda SnapStart", AWS Lambda Developer Guide). The simulation here: initialise, record
the state of every pseudo-random generator in the process (the snapshot), then twice set
each generator back to it and run the runtime's after-restore hooks (two restores), and
draw what dynashard draws. A generator that keeps state (a Mersenne Twister, which the
``random`` module's functions share) replays the same sequence in both restores; the
control test shows the simulation catches that.
"""

from __future__ import annotations

import ast
import gc
import random
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from dynashard.core import entropy
from dynashard.core.retry import Backoff
from dynashard.core.strategies import random_shard
from dynashard.lambda_kit import kit

SRC = Path(__file__).resolve().parents[4] / "layers" / "dynashard" / "src" / "dynashard"
Snapshot = list[tuple[random.Random, object]]


def take_snapshot() -> Snapshot:
    """The state of every stateful generator alive in the process."""
    return [
        (r, r.getstate())
        for r in gc.get_objects()
        if isinstance(r, random.Random) and not isinstance(r, random.SystemRandom)
    ]


def restore(snapshot: Snapshot, after_restore: list[Callable[[], None]]) -> None:
    """Put every generator back as the snapshot holds it, then run the after-restore hooks."""
    for generator, state in snapshot:
        generator.setstate(state)  # type: ignore[arg-type]
    for hook in after_restore:
        hook()


def shard_sequence() -> list[object]:
    """What one environment draws first: 32 shards of a random key, 8 back-off delays."""
    return [random_shard(64) for _ in range(32)] + [Backoff().delay(3) for _ in range(8)]


def test_two_restores_of_one_snapshot_choose_different_shard_sequences() -> None:
    # Given an initialised process whose shared generator was seeded and used at init
    random.seed(1234)
    shard_sequence()
    snapshot = take_snapshot()
    # When it is restored twice, with dynashard's after-restore hook
    hooks = [entropy.reseed_shared_random]
    restore(snapshot, hooks)
    first = shard_sequence()
    restore(snapshot, hooks)
    second = shard_sequence()
    # Then the two environments choose different shard sequences and back off differently
    assert first[:32] != second[:32]
    assert first[32:] != second[32:]
    # And the shared generator others draw from (botocore's jitter) differs too
    restore(snapshot, hooks)
    a = [random.random() for _ in range(4)]
    restore(snapshot, hooks)
    assert a != [random.random() for _ in range(4)]


def test_the_simulation_replays_a_generator_that_keeps_state() -> None:
    # Given the draws of the code before issue 29: the random module's shared generator
    def old_sequence() -> list[int]:
        return [random.randrange(64) for _ in range(32)]

    random.seed(1234)
    snapshot = take_snapshot()
    # When the snapshot is restored twice without a hook
    restore(snapshot, [])
    first = old_sequence()
    restore(snapshot, [])
    # Then both restores draw the same shards: the test above could fail
    assert first == old_sequence()


def test_no_dynashard_module_draws_from_a_stateful_generator() -> None:
    # Every draw goes through core.entropy.SYSTEM_RANDOM; the random module is imported
    # there only
    offenders = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            imported = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if "random" in imported and path.name != "entropy.py":
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == []
    assert isinstance(entropy.SYSTEM_RANDOM, random.SystemRandom)


def test_the_kit_registers_the_reseed_as_an_after_restore_hook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given Lambda's runtime-hooks module (here a stand-in that records registrations)
    registered: list[Callable[[], None]] = []
    hooks = types.ModuleType(kit.RUNTIME_HOOKS_MODULE)
    hooks.register_after_restore = registered.append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, kit.RUNTIME_HOOKS_MODULE, hooks)
    monkeypatch.setattr(kit, "_hooks_registered", False)
    # When functions register, twice
    assert kit.register_after_restore() is True
    assert kit.register_after_restore() is True
    # Then the shared generator's reseed is registered once
    assert registered == [entropy.reseed_shared_random]


def test_outside_lambda_no_hook_is_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, kit.RUNTIME_HOOKS_MODULE, None)  # import fails
    monkeypatch.setattr(kit, "_hooks_registered", False)
    assert kit.register_after_restore() is False
