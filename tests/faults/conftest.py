"""The fuzz and fault suite (issue 24): every test here is marked ``fault``.

    python -m pytest tests/faults          # the quick ones (as in the default run)
    python -m pytest -m fault             # all of them, the slow ones included
"""

import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "/faults/" in str(item.fspath):
            item.add_marker(pytest.mark.fault)
