"""svir-proto: a sans-IO protocol engine for streaming LLM inference over HTTP.

The core turns response bytes into typed events (`svir_proto.events`) and typed requests into
bytes. It never does I/O: transports in `svir_proto.transports` move the bytes.

Every public name of the core is importable from here (``from svir_proto import TextDelta``)
as from its own module, but nothing is loaded before it is used (PEP 562): ``import
svir_proto`` costs a few hundred microseconds, and a name loads the modules it needs only, the
cheapest first (`_MODULES`). The dialect packages in `_DIALECTS` keep their names to
themselves (``from svir_proto.anthropic import ...``): their names would collide across
dialects.

Docstrings cite "the wire reference" (svir-proto's notes on what OpenAI-compatible servers
send, section by section, in ``svir_proto/docs/openai-chat-completions-wire.md``) and "the
draft" (the IETF draft ``draft-spk-agentproto-llm-stream-00``, summarised in
``svir_proto/docs/llm-stream-draft.md``); both ship with the package.
"""

from __future__ import annotations

from ._version import VERSION

TYPE_CHECKING = False  # as typing's, which a type checker takes as true: typing not loaded

__version__ = VERSION

if TYPE_CHECKING:  # what a type checker sees: every name, as its own module gives it
    # (from the leaf modules: mypy does not follow a star import through a package whose
    # __all__ is built from its modules' own)
    from . import answer as answer
    from . import body as body
    from . import connection as connection
    from . import dialects as dialects
    from . import errors as errors
    from . import events as events
    from . import exchange as exchange
    from . import gateway as gateway
    from . import hub as hub
    from . import llmstream as llmstream
    from . import openai as openai
    from . import speed as speed
    from . import sse as sse
    from . import translate as translate
    from ._pull import NEED_DATA as NEED_DATA
    from ._pull import NeedData as NeedData
    from .answer import *  # noqa: F403
    from .body import *  # noqa: F403
    from .connection import *  # noqa: F403
    from .dialects import *  # noqa: F403
    from .errors import *  # noqa: F403
    from .events import *  # noqa: F403
    from .exchange import *  # noqa: F403
    from .gateway import *  # noqa: F403
    from .hub import *  # noqa: F403
    from .llmstream.encoder import *  # noqa: F403
    from .llmstream.negotiate import *  # noqa: F403
    from .llmstream.request import *  # noqa: F403
    from .llmstream.stream import *  # noqa: F403
    from .openai._toolcalls import DEFAULT_MAX_TOOL_CALLS as DEFAULT_MAX_TOOL_CALLS
    from .openai._toolcalls import ToolCallError as ToolCallError
    from .openai.answer import *  # noqa: F403
    from .openai.encoder import *  # noqa: F403
    from .openai.endpoint import *  # noqa: F403
    from .openai.models import *  # noqa: F403
    from .openai.parts import *  # noqa: F403
    from .openai.request import *  # noqa: F403
    from .openai.retry import *  # noqa: F403
    from .openai.status import *  # noqa: F403
    from .openai.stream import *  # noqa: F403
    from .openai.watch import *  # noqa: F403
    from .speed import *  # noqa: F403
    from .sse import *  # noqa: F403
    from .translate import *  # noqa: F403

_MODULES = (
    # where the top-level names live, in the order a name is looked for: cheapest first
    "errors",
    "_pull",
    "events",
    "sse",
    "body",
    "speed",
    "openai",
    "llmstream",
    "hub",
    "dialects",
    "answer",
    "translate",
    "exchange",
    "connection",
    "gateway",
)
_DIALECTS: tuple[str, ...] = (
    # the vendor dialect packages, one line each (anthropic, responses, gemini): importable as
    # attributes (svir_proto.anthropic), their names not re-exported here
    "anthropic",
    "responses",
    "gemini",
)
_PACKAGES = ("transports", "cli")
_RENAMED = {  # old name: the module whose RENAMED map resolves it (with a DeprecationWarning)
    "ProtocolError": "errors",
    "RemoteProtocolError": "errors",
    "LocalProtocolError": "errors",
    "TransportError": "errors",
    "ConnectError": "errors",
    "StreamDecoder": "llmstream",
    "StreamEncoder": "llmstream",
}


def __getattr__(name: str) -> object:
    """A name of a submodule, loaded when it is first used, and kept."""
    import importlib

    if name == "__all__":
        names = ["__version__"]
        for module_name in _MODULES:
            names += importlib.import_module(f".{module_name}", __name__).__all__
        globals()["__all__"] = names
        return names
    if name.startswith("_"):  # what tools probe for (__wrapped__, __path__...) is not ours,
        # nor a private module: ``from . import _json`` then imports it (looked for in the
        # modules, it would import them all, and a dialect first imported met itself half-made)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _MODULES or name in _DIALECTS or name in _PACKAGES:
        return importlib.import_module(f".{name}", __name__)
    if name in _RENAMED:
        import warnings

        home = importlib.import_module(f".{_RENAMED[name]}", __name__)
        new = home.RENAMED[name]
        warnings.warn(
            f"{__name__}.{name} is now {new}; the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(home, new)
    for module_name in _MODULES:
        home = importlib.import_module(f".{module_name}", __name__)
        if name in home.__all__:
            value = getattr(home, name)
            globals()[name] = value  # found once: a plain attribute from now on
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    names: list[str] = __getattr__("__all__")  # type: ignore[assignment]
    return sorted({*globals(), *names, *_MODULES, *_DIALECTS, *_PACKAGES})
