from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("nightly", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


import pytest  # noqa: E402

from svir_proto import _json  # noqa: E402

BACKENDS = ["orjson", "json"] if _json.orjson is not None else ["json"]


@pytest.fixture(params=BACKENDS)
def json_backend(request: pytest.FixtureRequest) -> object:
    """Run a test with each JSON parser: orjson (the fast extra) and the standard library."""
    before = _json.BACKEND
    _json.use(request.param)
    yield request.param
    _json.use(before)


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, for the https servers of tests."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key
