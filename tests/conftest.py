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


@pytest.fixture
def cli_json(capsys):
    """Run `kokuban ARGS --json` in this process; its exit code must be 0; the result inside the envelope
    (`kokuban.present.jsonout.read_result`, which checks the envelope)."""
    from kokuban.cli import main
    from kokuban.present.jsonout import read_result

    def run(args: list[str], key: str | None = None):
        code = main([*args, "--json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        return read_result(out, key)

    return run
