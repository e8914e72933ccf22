"""Print the fuzzed document (:func:`tests.fuzz.fuzz_document`) as JSON."""

from __future__ import annotations

import json
import sys

from tests.fuzz import fuzz_document

sys.stdout.write(json.dumps(fuzz_document(), indent=2) + "\n")
