"""Test doubles that speak real wire protocols, so tests exercise the real SDKs.

Names are loaded lazily so that ``python -m tests.fakes.llm_server`` runs the module once.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FakeLLMServer", "RecordedRequest", "Reply", "closed_port_url"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tests.fakes import llm_server

        return getattr(llm_server, name)
    raise AttributeError(name)
