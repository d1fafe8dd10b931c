"""Test-suite settings: every property test is deterministic (a test that fails by chance is a defect); the helpers
several test modules share, as fixtures."""

import pytest
from hypothesis import settings

settings.register_profile("kokuban", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("kokuban")


def _same_groups(saved: dict, fresh: dict, rel: float = 1e-9) -> None:
    """Two reports' groups are the same figures: the same groups, each field within `rel`."""
    assert set(saved) == set(fresh)
    for key, group in fresh.items():
        for name, value in group.items():
            assert saved[key][name] == pytest.approx(value, rel=rel), (key, name)


@pytest.fixture
def same_groups():
    """`_same_groups`: a frozen or committed report's groups against the same groups computed now."""
    return _same_groups
