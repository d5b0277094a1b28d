"""Golden files: exported text compared byte for byte with a reviewed copy in ``golden/``.

To regenerate after an intended change, run

    ARGUE_UPDATE_GOLDEN=1 python -m pytest tests/export -q

then read the diff (``git diff tests/export/golden``) against FORMATS.md before keeping it.
"""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"
# Read at import: the suite's autouse fixture clears every ARGUE_ variable before each test.
UPDATE = os.environ.get("ARGUE_UPDATE_GOLDEN") == "1"


def assert_golden(name: str, actual: str) -> None:
    path = GOLDEN_DIR / name
    data = actual.encode("utf-8")
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return
    assert path.exists(), f"no golden {path}; run with ARGUE_UPDATE_GOLDEN=1 and review it"
    expected = path.read_bytes().decode("utf-8")
    assert actual == expected, f"{name} differs from its golden (ARGUE_UPDATE_GOLDEN=1 updates)"
