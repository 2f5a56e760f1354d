"""API keys: parsing from settings and key files, reloading a changed file, matching a presented
key, and the bearer header."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import pytest
from pydantic import SecretStr

from ragloop.orchestrator.access.auth import (
    ApiKey,
    ApiKeyError,
    ApiKeys,
    KeyFile,
    bearer_token,
    digest_of,
    is_public,
    parse_inline_keys,
    parse_key_file,
    public_paths,
    route_path,
)
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings

ALPHA, BRAVO, CHARLIE = "alpha-key-0001", "bravo.key_0002", "charlie~key+0003/=="


def fingerprint(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:8]


def write_atomically(path: Path, text: str) -> None:
    """How keys are rotated: a new file renamed over the old one."""
    staged = path.with_suffix(".new")
    staged.write_text(text)
    os.replace(staged, path)


def test_inline_keys_are_comma_separated_and_trimmed() -> None:
    assert parse_inline_keys(f" {ALPHA} ,, {BRAVO},") == [ApiKey(ALPHA), ApiKey(BRAVO)]
    assert parse_inline_keys(f"{ALPHA} tenant=acme, {BRAVO}") == [
        ApiKey(ALPHA, "acme"),
        ApiKey(BRAVO),
    ]
    assert parse_inline_keys("  ") == []


def test_key_file_skips_comments_and_blank_lines() -> None:
    text = f"# production keys\n\n{ALPHA}\n   {BRAVO}   # the CLI\n#{CHARLIE}\n"
    assert parse_key_file(text, "keys.txt") == [ApiKey(ALPHA), ApiKey(BRAVO)]


def test_a_key_file_line_may_bind_its_key_to_a_tenant() -> None:
    text = f"{ALPHA} tenant=acme   # acme's app\n{BRAVO}\t tenant=globex.eu:a@b-c\n{CHARLIE}\n"
    assert parse_key_file(text, "keys.txt") == [
        ApiKey(ALPHA, "acme"),
        ApiKey(BRAVO, "globex.eu:a@b-c"),
        ApiKey(CHARLIE),
    ]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("s3cret words", "only 'tenant=NAME' may follow"),
        ("k3y-s3cret tenant=acme extra", "only 'tenant=NAME' may follow"),
        ("k3y-s3cret tenant:acme", "only 'tenant=NAME' may follow"),
        ("k3y-s3cret tenant=", "tenant '' is invalid"),
        ("k3y-s3cret tenant=a/b", "tenant 'a/b' is invalid"),
        ("k3y-s3cret tenant=-acme", "tenant '-acme' is invalid"),
    ],
)
def test_a_malformed_tenant_binding_is_refused_by_line_without_echoing_the_key(
    entry: str, problem: str
) -> None:
    with pytest.raises(ApiKeyError, match=r"keys\.txt line 2: ") as caught:
        parse_key_file(f"{ALPHA}\n{entry}\n", "keys.txt")
    assert problem in str(caught.value)
    assert entry.split()[0] not in str(caught.value).removeprefix("keys.txt line 2: ")


@pytest.mark.parametrize("bad_key", ["quote'd", "comma,less", "ünïcode", "a=b", "tenant=acme"])
def test_a_malformed_key_is_refused_by_line_without_echoing_it(bad_key: str) -> None:
    with pytest.raises(ApiKeyError, match=r"keys\.txt line 2 is not a valid API key") as caught:
        parse_key_file(f"{ALPHA}\n{bad_key}\n", "keys.txt")
    assert bad_key not in str(caught.value)


def test_a_malformed_inline_key_is_refused_by_position() -> None:
    with pytest.raises(ApiKeyError, match="RAGLOOP_API_KEYS entry 2") as caught:
        parse_inline_keys(f"{ALPHA},bad key")
    assert "bad key" not in str(caught.value)


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (f"Bearer {ALPHA}", ALPHA),
        (f"bearer   {ALPHA} ", ALPHA),
        (f"BEARER {ALPHA}", ALPHA),
        ("Bearer", None),
        ("Bearer    ", None),
        (f"Basic {ALPHA}", None),
        (ALPHA, None),
        ("", None),
        (None, None),
    ],
)
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_a_presented_key_is_identified_by_its_fingerprint_only() -> None:
    keys = ApiKeys([ALPHA, BRAVO, CHARLIE])
    assert keys.identify(BRAVO) == fingerprint(BRAVO)
    assert keys.identify(CHARLIE) == fingerprint(CHARLIE)
    assert digest_of(ALPHA).fingerprint == fingerprint(ALPHA)
    for wrong in ("", ALPHA[:-1], ALPHA + "x", ALPHA.upper(), f"{ALPHA},{BRAVO}"):
        assert keys.identify(wrong) is None


def test_a_presented_key_is_matched_with_its_tenant() -> None:
    keys = ApiKeys([ApiKey(ALPHA, "acme"), BRAVO])
    assert keys.match(ALPHA) == digest_of(ApiKey(ALPHA, "acme"))
    assert keys.match(ALPHA).tenant == "acme"
    assert keys.match(BRAVO).tenant is None
    assert keys.match(CHARLIE) is None


def test_a_key_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    path.write_text(f"{ALPHA}\n")
    keys = ApiKeys([CHARLIE], KeyFile(path))
    assert keys.identify(ALPHA) == fingerprint(ALPHA)
    assert keys.identify(BRAVO) is None

    write_atomically(path, f"# rotated\n{BRAVO}\n")
    assert keys.identify(BRAVO) == fingerprint(BRAVO)
    assert keys.identify(ALPHA) is None
    assert keys.identify(CHARLIE) == fingerprint(CHARLIE)  # the settings' keys stay


def test_an_unusable_change_keeps_the_previous_keys_and_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "keys.txt"
    path.write_text(f"{ALPHA}\n")
    key_file = KeyFile(path)

    write_atomically(path, f"{BRAVO}\nnot a key\n")
    with caplog.at_level(logging.WARNING, logger="ragloop.orchestrator.access.auth"):
        for _ in range(3):
            assert [k.fingerprint for k in key_file.current()] == [fingerprint(ALPHA)]
    assert len(caplog.records) == 1
    assert "line 2" in caplog.text
    assert "not a key" not in caplog.text

    path.unlink()
    assert [k.fingerprint for k in key_file.current()] == [fingerprint(ALPHA)]

    path.write_text(f"{BRAVO}\n")
    assert [k.fingerprint for k in key_file.current()] == [fingerprint(BRAVO)]


def test_a_missing_or_malformed_key_file_stops_startup(tmp_path: Path) -> None:
    with pytest.raises(ApiKeyError, match=r"missing\.txt"):
        create_app(OrchestratorSettings(api_keys_file=str(tmp_path / "missing.txt")))
    malformed = tmp_path / "keys.txt"
    malformed.write_text("has space\n")
    with pytest.raises(ApiKeyError, match="line 1"):
        create_app(OrchestratorSettings(api_keys_file=str(malformed)))


def test_keys_are_off_only_without_keys_and_without_a_key_file(tmp_path: Path) -> None:
    assert ApiKeys.from_settings(OrchestratorSettings(api_keys=SecretStr(" , "))) is None

    empty = tmp_path / "keys.txt"
    empty.write_text("# nobody yet\n")
    keys = ApiKeys.from_settings(OrchestratorSettings(api_keys_file=str(empty)))
    assert keys is not None, "an empty key file must refuse everyone, not open the API"
    assert keys.current() == ()
    assert keys.identify("") is None


def test_keys_are_never_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "keys.txt"
    path.write_text(f"{BRAVO}\n")
    with caplog.at_level(logging.DEBUG, logger="ragloop.orchestrator.access.auth"):
        keys = ApiKeys.from_settings(
            OrchestratorSettings(api_keys=SecretStr(ALPHA), api_keys_file=str(path))
        )
        assert keys is not None
        write_atomically(path, f"{CHARLIE}\n")
        keys.identify(CHARLIE)
    logged = caplog.text + " ".join(str(r.__dict__) for r in caplog.records)
    assert fingerprint(ALPHA) in logged and fingerprint(CHARLIE) in logged
    for key in (ALPHA, BRAVO, CHARLIE):
        assert key not in logged


def test_public_paths_are_health_metrics_docs_and_the_page_only() -> None:
    public = public_paths(create_app(OrchestratorSettings()))
    for path in ("/", "/healthz", "/readyz", "/metrics", "/docs", "/redoc", "/openapi.json"):
        assert is_public(path, public), path
    assert is_public("/static/page.js", public)
    for path in ("/v1/query", "/v1/query/stream", "/healthz/", "/static", "/v1/collections"):
        assert not is_public(path, public), path


@pytest.mark.parametrize(
    ("path", "root_path", "seen"),
    [
        ("/v1/query", "", "/v1/query"),
        ("/rag/v1/query", "/rag", "/v1/query"),
        ("/rag", "/rag", "/"),
        ("/ragged/v1/query", "/rag", "/ragged/v1/query"),
    ],
)
def test_paths_are_judged_below_the_mount_point(path: str, root_path: str, seen: str) -> None:
    assert route_path({"path": path, "root_path": root_path}) == seen
