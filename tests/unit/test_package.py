"""The package's top level: every name importable from it, nothing loaded before it is used."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import svir_proto
from tests.helpers import ROOT


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after ``code``."""
    probe = f"{code}\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_import_svir_proto_loads_nothing_of_it() -> None:
    loaded = loaded_after("import svir_proto")
    ours = {m for m in loaded if m.startswith("svir_proto.")}
    assert ours == {"svir_proto._version"}
    assert "email.utils" not in loaded
    assert "attr" not in loaded
    assert "h11" not in loaded


@pytest.mark.parametrize(
    "code",
    [
        "from svir_proto import TextDelta, SSEDecoder",
        "from svir_proto.openai import ChatStreamDecoder, ChatRequest",
        "from svir_proto.transports.blocking import Client",
        "import svir_proto.transports",
    ],
)
def test_a_name_loads_what_it_needs_only(code: str) -> None:
    loaded = loaded_after(code)
    heavy = {"svir_proto.gateway", "svir_proto.translate", "email.utils"}
    if "transports" not in code:
        heavy |= {"svir_proto.llmstream", "svir_proto.exchange"}
    assert not heavy & loaded, heavy & loaded


def test_every_name_is_its_modules_own() -> None:
    import importlib

    for name in svir_proto.__all__:
        value = getattr(svir_proto, name)
        homes = [
            m
            for m in svir_proto._MODULES
            if name in importlib.import_module(f"svir_proto.{m}").__all__
        ]
        assert homes or name == "__version__", name
        for home in homes:
            assert getattr(importlib.import_module(f"svir_proto.{home}"), name) is value


def test_dir_and_the_submodules() -> None:
    names = dir(svir_proto)
    assert {"TextDelta", "openai", "transports", "ClientConnection"} <= set(names)
    assert svir_proto.openai is sys.modules["svir_proto.openai"]
    assert svir_proto.transports is sys.modules["svir_proto.transports"]


def test_what_it_does_not_have() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        svir_proto.nothing_here  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError, match="__wrapped__"):
        svir_proto.__wrapped__  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("RemoteProtocolError", "PeerProtocolError"),
        ("ConnectError", "ConnectionFailedError"),
        ("TransportError", "SvirTransportError"),
        ("StreamDecoder", "LLMStreamDecoder"),
    ],
)
def test_the_old_names_still_resolve_with_a_warning(old: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"svir_proto.{old} is now {new}"):
        value = getattr(svir_proto, old)
    assert value is getattr(svir_proto, new)


def test_a_submodule_is_an_attribute_before_it_is_imported() -> None:
    loaded = loaded_after(
        "import svir_proto\nassert svir_proto.speed.__name__ == 'svir_proto.speed'"
    )
    assert "svir_proto.speed" in loaded
    assert "svir_proto.gateway" not in loaded
