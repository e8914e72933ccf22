"""The library's version: the installed distribution's, one source for the package.

The version is written once, by the build: setuptools-scm derives it from the git tag
(``vX.Y.Z``; between tags ``X.Y.(Z+1).devN+g<commit>``), and the wheel's metadata holds
it. ``dynashard.__version__`` reads that metadata (:mod:`importlib.metadata`) on first
use, not when ``dynashard`` is imported: importing importlib.metadata costs a cold start
about as much as the pure layers themselves.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Final

#: The distribution's name (layers/dynashard/pyproject.toml).
DISTRIBUTION: Final = "dynashard"
#: What a source tree on ``sys.path`` that was never installed reports, and what a build
#: without git metadata, PKG-INFO or ``SETUPTOOLS_SCM_PRETEND_VERSION_FOR_DYNASHARD`` gets
#: (pyproject's ``fallback_version``): a local version, which a package index refuses, so
#: such a build cannot be published under a real version.
UNKNOWN_VERSION: Final = "0.0.0+unknown"


def installed_version(distribution: str = DISTRIBUTION) -> str:
    """Return the installed distribution's version, from its metadata.

    Parameters
    ----------
    distribution : str
        The distribution's name.

    Returns
    -------
    str
        Its version (PEP 440), or :data:`UNKNOWN_VERSION` when it is not installed (the
        package imported from a source tree on ``sys.path``).
    """
    try:
        return version(distribution)
    except PackageNotFoundError:
        return UNKNOWN_VERSION
