"""Submission parsing: table-driven happy and sad paths (pure, no server)."""

from __future__ import annotations

import pytest
from taskqueue.submission import (
    FactorialSpec,
    FetchSpec,
    SubmissionError,
    body_fingerprint,
    parse_submission,
)


@pytest.mark.parametrize(
    "label,body,kind,expect",
    [
        ("factorial", b'{"type":"factorial","n":0}', FactorialSpec, {"n": 0}),
        ("factorial at max", b'{"type":"factorial","n":100}', FactorialSpec, {"n": 100}),
        (
            "fetch defaults",
            b'{"type":"http-fetch","url":"https://example.com/x"}',
            FetchSpec,
            {"url": "https://example.com/x", "timeout_ms": 10000, "hedge_after_ms": None},
        ),
        (
            "fetch all fields",
            b'{"type":"http-fetch","url":"http://a.example/","timeout_ms":500,"hedge_after_ms":50}',
            FetchSpec,
            {"timeout_ms": 500, "hedge_after_ms": 50},
        ),
    ],
)
def test_valid(label: str, body: bytes, kind: type, expect: dict) -> None:
    spec = parse_submission(body, max_factorial_n=100)
    assert isinstance(spec, kind), label
    for k, v in expect.items():
        assert getattr(spec, k) == v, label


@pytest.mark.parametrize(
    "label,body,status,field",
    [
        ("bad json", b'{"type":', 400, None),
        ("array", b"[]", 422, None),
        ("null", b"null", 422, None),
        ("no type", b"{}", 422, "type"),
        ("type not string", b'{"type": 5}', 422, "type"),
        ("over max", b'{"type":"factorial","n":101}', 422, "n"),
        ("huge n", b'{"type":"factorial","n":1e400}', 400, None),
        ("n null", b'{"type":"factorial","n":null}', 422, "n"),
        ("unknown field", b'{"type":"factorial","n":1,"m":2}', 422, "m"),
        ("url number", b'{"type":"http-fetch","url":5}', 422, "url"),
        ("url empty", b'{"type":"http-fetch","url":""}', 422, "url"),
        ("url javascript", b'{"type":"http-fetch","url":"javascript:alert(1)"}', 422, "url"),
        (
            "timeout too big",
            b'{"type":"http-fetch","url":"http://a.example/","timeout_ms":999999}',
            422,
            "timeout_ms",
        ),
        (
            "hedge zero",
            b'{"type":"http-fetch","url":"http://a.example/","hedge_after_ms":0}',
            422,
            "hedge_after_ms",
        ),
    ],
)
def test_invalid(label: str, body: bytes, status: int, field: str | None) -> None:
    with pytest.raises(SubmissionError) as err:
        parse_submission(body, max_factorial_n=100)
    assert (err.value.status, err.value.field) == (status, field), (label, err.value.message)
    assert "\n" not in err.value.message


def test_fingerprint_ignores_key_order_and_spacing() -> None:
    a = body_fingerprint(b'{"type":"factorial","n":3}')
    assert a == body_fingerprint(b'{ "n": 3, "type": "factorial" }')
    assert a != body_fingerprint(b'{"type":"factorial","n":4}')
