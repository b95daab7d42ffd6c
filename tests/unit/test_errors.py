"""The error hierarchy, and choosing the JSON parser."""

from __future__ import annotations

import pytest

from svir_proto import LocalProtocolError, ProtocolError, RemoteProtocolError, _json


def test_protocol_error_is_abstract() -> None:
    with pytest.raises(TypeError, match="abstract"):
        ProtocolError("x")
    err = RemoteProtocolError("too big", offset=3, limit="max_event_size", limit_value=8)
    assert (err.offset, err.limit, err.limit_value) == (3, "max_event_size", 8)
    assert isinstance(LocalProtocolError("x"), ProtocolError)


def test_json_backend_names_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="'orjson' or 'json'"):
        _json.use("simdjson")  # type: ignore[arg-type]
    monkeypatch.setattr(_json, "orjson", None)
    with pytest.raises(ValueError, match="orjson is not installed"):
        _json.use("orjson")
