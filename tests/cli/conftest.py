"""pytest fixture `paisoar`: runs the real binary (cli_support.run)."""
import pytest

from cli_support import run


@pytest.fixture
def paisoar():
    return run
