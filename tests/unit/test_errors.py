"""The error hierarchy, and choosing the JSON parser."""

from __future__ import annotations

import pytest

from svir_proto import CallerProtocolError, PeerProtocolError, SvirProtocolError, _json


def test_protocol_error_is_abstract() -> None:
    with pytest.raises(TypeError, match="abstract"):
        SvirProtocolError("x")
    err = PeerProtocolError("too big", offset=3, limit="max_event_size", limit_value=8)
    assert (err.offset, err.limit, err.limit_value) == (3, "max_event_size", 8)
    assert isinstance(CallerProtocolError("x"), SvirProtocolError)


def test_json_backend_names_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="'orjson' or 'json'"):
        _json.use("simdjson")  # type: ignore[arg-type]
    monkeypatch.setattr(_json, "orjson", None)
    with pytest.raises(ValueError, match="orjson is not installed"):
        _json.use("orjson")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("ProtocolError", "SvirProtocolError"),
        ("RemoteProtocolError", "PeerProtocolError"),
        ("LocalProtocolError", "CallerProtocolError"),
    ],
)
def test_the_old_names_still_work_with_a_warning(old: str, new: str) -> None:
    import svir_proto
    import svir_proto.errors

    for module in (svir_proto, svir_proto.errors):
        with pytest.warns(DeprecationWarning, match=new):
            assert getattr(module, old) is getattr(svir_proto.errors, new)
    with pytest.raises(AttributeError):
        svir_proto.errors.NoSuchError  # noqa: B018
    with pytest.raises(AttributeError):
        svir_proto.NoSuchError  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("svir_proto.llmstream", "StreamDecoder", "LLMStreamDecoder"),
        ("svir_proto.llmstream.stream", "StreamDecoder", "LLMStreamDecoder"),
        ("svir_proto.llmstream", "StreamEncoder", "LLMStreamEncoder"),
        ("svir_proto.llmstream.encoder", "StreamEncoder", "LLMStreamEncoder"),
        ("svir_proto", "StreamDecoder", "LLMStreamDecoder"),
    ],
)
def test_renamed_classes_keep_their_old_names_for_a_release(
    module: str, old: str, new: str
) -> None:
    import importlib

    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=new):
        assert getattr(mod, old) is getattr(mod, new)


def test_every_protocol_error_is_a_svir_error() -> None:
    from svir_proto.errors import CallerProtocolError, PeerProtocolError, SvirError

    assert issubclass(PeerProtocolError, SvirError)
    assert issubclass(CallerProtocolError, SvirError)


def test_one_class_per_failure_kind() -> None:
    from svir_proto import (
        Failure,
        FailureKind,
        IncompleteStreamError,
        RequestFailedError,
        SvirError,
        SvirTransportError,
        failure_error,
    )
    from svir_proto.events import Completion

    classes = {type(failure_error(Failure(kind=k, message="m"))) for k in FailureKind}
    assert len(classes) == len(FailureKind)  # each kind its own
    for kind in FailureKind:
        error = failure_error(Failure(kind=kind, message="said so", status=503))
        assert isinstance(error, RequestFailedError)
        assert type(error).kind is kind
        assert str(error) == f"{kind.value} (HTTP 503): said so"
    assert str(failure_error(Failure(kind=FailureKind.TIMEOUT, message="m"))) == "timeout: m"
    assert RequestFailedError.kind is None
    assert issubclass(RequestFailedError, SvirError)
    assert not issubclass(RequestFailedError, SvirTransportError)
    cut = IncompleteStreamError("cut", Completion(cut=True))
    assert cut.result.cut
    assert isinstance(cut, SvirError)
