"""Test-suite settings: every property test is deterministic (a test that fails by chance is a defect)."""

from hypothesis import settings

settings.register_profile("kokuban", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("kokuban")
