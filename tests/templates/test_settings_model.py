"""A template's settings block: limits parsed by the same parsers as the service settings."""

from __future__ import annotations

import pydantic
import pytest

from browserq.templates.settings_model import TemplateSettings


def test_rate_limits_are_normalized_like_browserq_rate_limits() -> None:
    settings = TemplateSettings(rate_limits={"Example.COM": "120/min", "*": "off"})
    assert settings.rate_limits == {"example.com": "2/s", "*": "unlimited"}
    with pytest.raises(pydantic.ValidationError, match="invalid rate 'fast'"):
        TemplateSettings(rate_limits={"example.com": "fast"})


def test_block_resources_are_checked_and_sorted() -> None:
    assert TemplateSettings(block_resources=["Media", "image"]).block_resources == ["image", "media"]
    with pytest.raises(pydantic.ValidationError, match=r"'css' \(did you mean 'stylesheet'\?\)"):
        TemplateSettings(block_resources=["css"])


def test_domains_trace_and_network() -> None:
    settings = TemplateSettings(allowed_domains=[" Quotes.Example "], trace=False, network="strict")
    assert settings.allowed_domains == ["quotes.example"] and settings.trace == "off"
    with pytest.raises(pydantic.ValidationError, match="must be a bare host name"):
        TemplateSettings(allowed_domains=["https://quotes.example/"])
    with pytest.raises(pydantic.ValidationError, match="allowed_domains is empty"):
        TemplateSettings(network="strict")
