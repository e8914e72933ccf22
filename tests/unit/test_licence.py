"""The licence: Apache-2.0, declared in both packages' metadata (PEP 639), one text.

The library's ``license-files`` cannot reach outside ``layers/dynashard`` (PEP 639), so
LICENSE and NOTICE are copies of the repository root's there; they must stay the same.
The wheel carries them (tests/integration/test_wheel.py).
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import pytest
from packaging.licenses import canonicalize_license_expression

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "layers" / "dynashard"
CONSTRUCT = ROOT / "packages" / "dynashard-cdk"
#: SHA-256 of the Apache License 2.0 as the Apache Software Foundation publishes it
#: (LICENSE-2.0.txt), unaltered: a changed word is a different licence.
APACHE_2_0_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


@pytest.mark.parametrize("package", [LIBRARY, CONSTRUCT])
@pytest.mark.parametrize("name", ["LICENSE", "NOTICE"])
def test_the_packages_licence_files_are_the_repositorys(package: Path, name: str) -> None:
    assert (package / name).read_bytes() == (ROOT / name).read_bytes(), f"copy {name} again"


def test_the_licence_is_the_apache_2_0_text_unaltered() -> None:
    assert hashlib.sha256((ROOT / "LICENSE").read_bytes()).hexdigest() == APACHE_2_0_SHA256


def test_the_notice_carries_the_copyright_line() -> None:
    lines = (ROOT / "NOTICE").read_text().splitlines()
    assert lines[0] == "dynashard"
    assert lines[1].startswith("Copyright ") and lines[1].endswith(" dynashard contributors")


@pytest.mark.parametrize(
    "pyproject",
    [ROOT / "pyproject.toml", LIBRARY / "pyproject.toml", CONSTRUCT / "pyproject.toml"],
)
def test_both_packages_declare_apache_2_0_with_their_files(pyproject: Path) -> None:
    project = tomllib.loads(pyproject.read_text())["project"]
    # PEP 639: an SPDX expression, the files beside the pyproject, no licence classifier
    assert canonicalize_license_expression(project["license"]) == "Apache-2.0"
    assert project["license-files"] == ["LICENSE", "NOTICE"]
    assert all((pyproject.parent / name).is_file() for name in project["license-files"])
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]
    assert [author["name"] for author in project["authors"]] == ["dynashard contributors"]
    urls = project["urls"]
    assert set(urls) == {"Documentation", "Source", "Changelog", "Issues"}
    assert all(url.startswith("https://") for url in urls.values())
