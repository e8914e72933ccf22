"""The ``dynashard`` command: an operator's view of shard counts, hot keys and capacity.

Installed by the optional extra ``dynashard[cli]`` (typer and rich; ``status --chart``
needs matplotlib, the ``chart`` extra: :mod:`dynashard.cli.charts`), so the
Lambda layer, which installs the library without extras, stays small; nothing on a
Lambda code path imports this package. Entry point: :func:`dynashard.cli.app.main`.

Exit codes (also in ``dynashard --help``):

- 0: done;
- 1: error (DynamoDB, CloudWatch or the sandbox failed, or a file could not be read);
- 2: usage (a bad option or value, named in the message);
- 3: refused (``resize`` inside the key's cooldown without ``--force``, or of an
  ordered key, whose count is its range layout's; ``compact`` that left extra copies
  in place because they differ from the kept one or changed meanwhile);
- 4: not found (``status`` of a key with no metadata item, ``hot`` on a table without
  Contributor Insights).

The repository's development jobs (the local sandbox, the demo, the chaos run, the
benchmarks) are not commands of this package: they ship with the repository, not with
the library, and its README says how to run them.
"""
