"""Which bus the settings choose, and what ``ARGUE_REDIS_URL`` accepts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.bus import bus_from_settings
from app.config import Settings
from app.events import EventHub
from app.redis_bus import RedisBus


async def test_without_a_redis_url_events_stay_in_memory_and_with_one_they_go_to_redis() -> None:
    assert isinstance(bus_from_settings(Settings()), EventHub)
    assert isinstance(bus_from_settings(Settings(redis_url="")), EventHub)
    bus = bus_from_settings(
        Settings(redis_url="redis://127.0.0.1:6379/0", redis_key_prefix="elsewhere:")
    )
    assert isinstance(bus, RedisBus)
    assert bus.stream_key("d1") == "elsewhere:d1"
    await bus.aclose()


@pytest.mark.parametrize("url", ["localhost:6379", "http://redis:6379", "postgresql://x/y"])
def test_a_url_that_is_not_redis_is_refused_with_the_setting_named(url: str) -> None:
    with pytest.raises(ValidationError, match="ARGUE_REDIS_URL must start with redis://"):
        Settings(redis_url=url)


def test_the_redis_password_is_redacted_like_every_secret() -> None:
    settings = Settings(redis_url="redis://:s3cret-pass@cache:6379/0")
    assert "s3cret-pass" in settings.secret_values()
    assert "s3cret-pass" not in repr(settings)
