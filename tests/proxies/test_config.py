"""Parsing proxies from settings: schemes, credentials, regions, files, and errors that never leak."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from browserq.errors import ConfigError
from browserq.proxies import (
    Proxy,
    ProxyConfig,
    load_proxies,
    parse_proxy,
    proxy_redis_url,
    redact_proxy_setting,
)
from browserq.settings import load_settings
from tests.proxies.conftest import PASSWORD


def test_http_with_credentials_and_region() -> None:
    proxy = parse_proxy(f"http://alice:{PASSWORD}@Proxy.Example.com:3128#region=DE")
    assert (proxy.scheme, proxy.host, proxy.port) == ("http", "proxy.example.com", 3128)
    assert (proxy.username, proxy.password, proxy.region) == ("alice", PASSWORD, "de")
    assert proxy.server == "http://proxy.example.com:3128"
    assert proxy.label == "http://alice:***@proxy.example.com:3128"
    assert proxy.playwright_options() == {
        "server": "http://proxy.example.com:3128",
        "username": "alice",
        "password": PASSWORD,
    }
    for text in (proxy.label, repr(proxy), str(proxy), proxy.server):
        assert PASSWORD not in text
    with pytest.raises(AttributeError):
        proxy.port = 1  # type: ignore[misc]  # frozen


@pytest.mark.parametrize(
    ("url", "server"),
    [
        ("http://10.0.0.1", "http://10.0.0.1:80"),
        ("https://secure.example:8443", "https://secure.example:8443"),
        ("socks5://127.0.0.1:1080", "socks5://127.0.0.1:1080"),
        ("socks5://127.0.0.1", "socks5://127.0.0.1:1080"),
        ("HTTP://[::1]:3128/", "http://[::1]:3128"),
    ],
)
def test_schemes_and_default_ports(url: str, server: str) -> None:
    proxy = parse_proxy(url)
    assert proxy.server == server
    assert proxy.playwright_options() == {"server": server}
    assert proxy.label == server


def test_percent_encoded_credentials_are_decoded() -> None:
    proxy = parse_proxy("http://us%40er:p%2Fa%3As%40s%2Cx@h:1")
    assert (proxy.username, proxy.password) == ("us@er", "p/a:s@s,x")
    assert "p/a" not in proxy.label and proxy.label == "http://us@er:***@h:1"


def test_user_without_password() -> None:
    proxy = parse_proxy("http://token@h:1")
    assert proxy.label == "http://token@h:1"
    assert proxy.playwright_options() == {
        "server": "http://h:1",
        "username": "token",
        "password": "",
    }


def test_id_is_stable_and_ignores_credentials_and_region() -> None:
    a = parse_proxy(f"http://alice:{PASSWORD}@h:3128#region=de")
    b = parse_proxy("http://bob:other@H:3128")
    c = parse_proxy("http://h:3129")
    assert a.id == b.id and a.id != c.id and len(a.id) == 12
    assert a.id == hashlib.sha256(b"http://h:3128").hexdigest()[:12]  # stable across processes
    assert parse_proxy("http://h:3128").id == a.id
    assert parse_proxy("https://h:3128").id != a.id


def _settings(tmp_path: Path, **values: object):
    return load_settings(database_url=f"sqlite:///{tmp_path / 'x.db'}", **values)


def test_settings_from_env_json_comma_and_newlines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BROWSERQ_PROXIES", f'["http://a:{PASSWORD}@h1:1", "socks5://h2:2"]')
    assert [p.server for p in load_proxies(_settings(tmp_path))] == ["http://h1:1", "socks5://h2:2"]
    monkeypatch.setenv("BROWSERQ_PROXIES", "http://h1:1, https://h2:2 ,\nsocks5://h3:3\n")
    assert [p.server for p in load_proxies(_settings(tmp_path))] == [
        "http://h1:1",
        "https://h2:2",
        "socks5://h3:3",
    ]
    monkeypatch.setenv("BROWSERQ_PROXIES", "")
    assert load_proxies(_settings(tmp_path)) == []
    monkeypatch.setenv("BROWSERQ_PROXY_STRATEGY", "sticky_domain")
    monkeypatch.setenv("BROWSERQ_PROXY_COOLDOWN_S", "0.5")
    config = ProxyConfig.from_settings(_settings(tmp_path))
    assert (config.strategy, config.cooldown_s, config.cooldown_max_s) == (
        "sticky_domain",
        0.5,
        900.0,
    )


def test_proxies_file_with_comments_and_duplicates(tmp_path: Path) -> None:
    file = tmp_path / "proxies.txt"
    file.write_text(
        "# residential pool\n"
        "\n"
        f"http://alice:{PASSWORD}@h1:3128#region=de   # Frankfurt\n"
        "   socks5://h2:1080\n"
        f"http://alice:{PASSWORD}@h1:3128#region=de\n"  # exact duplicate: dropped
    )
    proxies = load_proxies(_settings(tmp_path, proxies="http://h0:1", proxies_file=file))
    assert [(p.server, p.region) for p in proxies] == [
        ("http://h0:1", None),
        ("http://h1:3128", "de"),
        ("socks5://h2:1080", None),
    ]


def test_same_server_with_other_credentials_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_proxies(
            _settings(tmp_path, proxies=[f"http://a:{PASSWORD}@h:1", "http://b:zzz-other@h:1"])
        )
    message = str(info.value)
    assert "BROWSERQ_PROXIES[1]" in message and "BROWSERQ_PROXIES[0]" in message
    assert PASSWORD not in message and "zzz-other" not in message


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (f"alice:{PASSWORD}@h:3128", "missing scheme"),
        (f"ftp://alice:{PASSWORD}@h:21", "unsupported scheme"),
        (f"http://alice:{PASSWORD}@h:99999", "port"),
        (f"http://alice:{PASSWORD}@h:abc", "port"),
        (f"http://alice:{PASSWORD}@:3128", "host"),
        (f"http://alice:{PASSWORD}@h:3128/path", "no path"),
        (f"http://alice:{PASSWORD}/x@h:3128", "no path"),  # an unencoded / in the password
        (f"http://alice:{PASSWORD}#x@h:3128", "port"),  # an unencoded # in the password
        (f"socks5://alice:{PASSWORD}@h:1080", "SOCKS5 proxy authentication"),
        (f"http://alice:{PASSWORD}@h:3128#region=d e", "whitespace"),
        (f"http://alice:{PASSWORD}@h:3128#country=de", "fragment"),
        (f"http://:{PASSWORD}@h:3128", "user name"),
    ],
)
def test_bad_urls_name_the_entry_and_never_echo_the_password(url: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_proxy(url, "BROWSERQ_PROXIES[3]")
    message = str(info.value)
    assert message.startswith("BROWSERQ_PROXIES[3]: ") and reason in message
    assert PASSWORD not in message and "S3cret" not in message


def test_comma_inside_a_password_does_not_leak(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_proxies(_settings(tmp_path, proxies="http://alice:hunter,S3cretTail@h:1"))
    message = str(info.value)
    assert (
        "BROWSERQ_PROXIES[0]" in message and "hunter" not in message and "S3cretTail" not in message
    )


def test_bad_file_lines_name_the_line(tmp_path: Path) -> None:
    file = tmp_path / "p.txt"
    file.write_text(f"http://h:1\n\nhttp://alice:{PASSWORD}@h:2 trailing-junk\n")
    with pytest.raises(ConfigError) as info:
        load_proxies(_settings(tmp_path, proxies_file=file))
    assert f"{file}:3" in str(info.value) and PASSWORD not in str(info.value)
    file.write_text(f"http://h:1\nhttp://alice:{PASSWORD}@h:notaport\n")
    with pytest.raises(ConfigError) as info:
        load_proxies(_settings(tmp_path, proxies_file=file))
    assert f"{file}:2" in str(info.value) and PASSWORD not in str(info.value)
    with pytest.raises(ConfigError, match="BROWSERQ_PROXIES_FILE"):
        load_proxies(_settings(tmp_path, proxies_file=tmp_path / "missing.txt"))


def test_bad_json_and_bad_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROWSERQ_PROXIES", f'["http://a:{PASSWORD}@h:1"')
    with pytest.raises(ConfigError, match="not a valid JSON list") as info:
        load_proxies(_settings(tmp_path))
    assert PASSWORD not in str(info.value)
    monkeypatch.delenv("BROWSERQ_PROXIES")
    with pytest.raises(ConfigError, match="BROWSERQ_PROXY_STRATEGY"):
        _settings(tmp_path, proxy_strategy="fastest")
    with pytest.raises(ConfigError, match="COOLDOWN_MAX_S"):
        ProxyConfig.from_settings(_settings(tmp_path, proxy_cooldown_s=60, proxy_cooldown_max_s=30))


def test_redis_url_defaults(tmp_path: Path) -> None:
    assert proxy_redis_url(_settings(tmp_path, broker_url="redis://b:6379/3")) == "redis://b:6379/3"
    assert (
        proxy_redis_url(_settings(tmp_path, broker_url="amqp://guest@r//"))
        == "redis://127.0.0.1:6379/0"
    )
    assert proxy_redis_url(_settings(tmp_path, proxy_redis_url="redis://x/7")) == "redis://x/7"


def test_redacted_setting_for_display() -> None:
    shown = redact_proxy_setting([f"http://alice:{PASSWORD}@h:1", "socks5://h:2"])
    assert shown == "http://alice:***@h:1, socks5://h:2"
    assert PASSWORD not in redact_proxy_setting(f"http://alice:{PASSWORD}@h:1,http://h:2")
    assert isinstance(parse_proxy("http://h:1"), Proxy)
