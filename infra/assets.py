"""Where the construct's assets are: in a checkout, or in the installed ``dynashard-cdk``.

The construct deploys two kinds of files besides its own code: each function's code
(``functions/<name>/``) and what the layer is built from (the library and the
hash-locked run-time dependencies). In a checkout of the repository they are the
repository's folders; in the ``dynashard-cdk`` package (``packages/dynashard-cdk``,
which ships this folder as ``dynashard_cdk``) the functions' code is the package's
``functions/`` folder and the lock its ``layer/requirements.lock``, while the library
is the installed ``dynashard`` distribution (:mod:`infra.constructs.layer`). Every
path is found from this file, never from the working directory, so a CDK app anywhere
synthesizes the same assets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

#: This package's folder: ``infra/`` in a checkout, ``dynashard_cdk/`` when installed.
PACKAGE_DIR: Final = Path(__file__).resolve().parent
#: True when running from the installed ``dynashard-cdk`` package: only the package
#: carries the functions' code inside its own folder.
INSTALLED: Final = (PACKAGE_DIR / "functions").is_dir()
#: The repository's root in a checkout (``infra/`` -> ``.``); in the installed package,
#: the folder holding it (site-packages), which none of the paths below uses.
REPO_ROOT: Final = PACKAGE_DIR.parent
#: One folder per function; each is that function's code asset.
FUNCTIONS_DIR: Final = (PACKAGE_DIR if INSTALLED else REPO_ROOT) / "functions"
#: The library's source (an installable package) in a checkout; None when installed,
#: where the layer is built from the installed ``dynashard`` distribution instead.
LAYER_SOURCE: Final = None if INSTALLED else REPO_ROOT / "layers" / "dynashard"
#: The layer's run-time dependencies, transitive ones included, pinned with their hashes
#: for Lambda's Python on arm64 (``make lock`` regenerates it from the ``runtime`` group).
LAYER_LOCK: Final = (
    PACKAGE_DIR / "layer" / "requirements.lock"
    if INSTALLED
    else REPO_ROOT / "layers" / "dynashard" / "requirements.lock"
)
