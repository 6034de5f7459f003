"""Settings shared by the A2A peer tests: where the host is and which key to use."""

import os

import pytest


@pytest.fixture(scope="session")
def base_url() -> str:
    url = os.environ.get("OPENWOP_BASE_URL")
    if not url:
        pytest.fail("set OPENWOP_BASE_URL to the host under test")
    return url.rstrip("/")


@pytest.fixture(scope="session")
def api_key() -> str:
    key = os.environ.get("OPENWOP_API_KEY")
    if not key:
        pytest.fail("set OPENWOP_API_KEY to a key the host accepts")
    return key
