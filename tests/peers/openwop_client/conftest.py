"""Starts the real `openwop` binary for the peer tests and stops it afterwards.

The host is started the way the README starts it (`openwop serve`), with two extra
`--api-key` flags so the tests can act as two tenants side by side. The binary path comes
from OPENWOP_BIN (CI builds it once with cargo and passes the path in).
"""

import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest

TENANT_A_KEY = "peer-test-key-tenant-a-0123456789"
TENANT_B_KEY = "peer-test-key-tenant-b-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary() -> str:
    path = os.environ.get("OPENWOP_BIN")
    if not path:
        pytest.exit("OPENWOP_BIN must name the built `openwop` binary", returncode=2)
    return path


def _wait_ready(base_url: str, proc: subprocess.Popen, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"host exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base_url}/.well-known/openwop", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("host did not become ready in time")


class Host:
    def __init__(self, base_url: str, proc: subprocess.Popen, stdout_path: str):
        self.base_url = base_url
        self.proc = proc
        self.stdout_path = stdout_path

    def stdout(self) -> str:
        with open(self.stdout_path, encoding="utf-8", errors="replace") as f:
            return f.read()


def _start(extra_args: list[str]) -> Host:
    port = _free_port()
    data_dir = tempfile.mkdtemp(prefix="openwop-peer-")
    out = tempfile.NamedTemporaryFile(prefix="openwop-peer-out-", delete=False)
    proc = subprocess.Popen(
        [_binary(), "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir, *extra_args],
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}"
    _wait_ready(base_url, proc)
    return Host(base_url, proc, out.name)


def _stop(host: Host) -> None:
    host.proc.terminate()
    try:
        host.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        host.proc.kill()
        host.proc.wait()


@pytest.fixture(scope="session")
def host():
    h = _start(["--api-key", f"tenant-a:{TENANT_A_KEY}", "--api-key", f"tenant-b:{TENANT_B_KEY}"])
    yield h
    _stop(h)


@pytest.fixture(scope="session")
def dev_host():
    """A host started exactly as the README says: no key given, so it mints one."""
    h = _start([])
    yield h
    _stop(h)


def dev_key_from(stdout: str) -> str:
    match = re.search(r'dev API key for tenant "dev": (\S+)', stdout)
    if not match:
        raise AssertionError(f"no dev key line in the host's output:\n{stdout}")
    return match.group(1)
