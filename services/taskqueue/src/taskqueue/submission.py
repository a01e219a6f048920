"""Submission: parsing and validation of `POST /tasks/submissions` bodies.

pydantic (its Rust core) validates the JSON in one pass, which is both faster than
FastAPI's generic body handling and lets the API choose its own status codes: malformed
JSON is a 400, a well-formed body with a bad field is a 422 naming the field.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from taskqueue.fetch import check_url  # the fetcher owns the URL rules

MAX_TIMEOUT_MS = 120_000
"""MAX_TIMEOUT_MS caps an http-fetch task's own deadline so a lease can always cover it."""


class FactorialSpec(BaseModel):
    """FactorialSpec is a request to compute n! (the upper bound of n is checked against config)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    type: Literal["factorial"]
    n: int = Field(ge=0, description="0 <= n <= the server's --max-factorial-n (default 20000)")


class FetchSpec(BaseModel):
    """FetchSpec is a request to fetch one http(s) URL and keep its body and Content-Type."""

    model_config = ConfigDict(extra="forbid", strict=True)
    type: Literal["http-fetch"]
    url: str = Field(min_length=1, max_length=2048)
    timeout_ms: int = Field(default=10_000, ge=1, le=MAX_TIMEOUT_MS)
    hedge_after_ms: int | None = Field(default=None, ge=1, le=MAX_TIMEOUT_MS)

    @field_validator("url")
    @classmethod
    def _url_is_fetchable(cls, url: str) -> str:
        check_url(url)  # ValueError -> a 422 naming `url`
        return url


Spec = Annotated[FactorialSpec | FetchSpec, Field(discriminator="type")]
_ADAPTER: TypeAdapter[FactorialSpec | FetchSpec] = TypeAdapter(Spec)


class SubmissionError(Exception):
    """SubmissionError is a rejected submission: HTTP status, offending field and reason."""

    def __init__(self, status: int, field: str | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.field = field
        self.message = message

    def body(self) -> bytes:
        """body is the JSON error document sent to the client."""
        return orjson.dumps({"error": self.message, "field": self.field})


def _field_name(loc: tuple[Any, ...]) -> str | None:
    # The discriminated union puts the tag first in loc ("factorial", "n"); drop it.
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("factorial", "http-fetch"):
        parts = parts[1:]
    return ".".join(parts) or None


def parse_submission(body: bytes, max_factorial_n: int) -> FactorialSpec | FetchSpec:
    """parse_submission validates a raw body, raising SubmissionError (400/422) when bad."""
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise SubmissionError(400, None, f"malformed JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise SubmissionError(422, None, "body must be a JSON object")
    if "type" not in raw:
        raise SubmissionError(422, "type", "field required: 'factorial' or 'http-fetch'")
    if raw["type"] not in ("factorial", "http-fetch"):
        raise SubmissionError(
            422, "type", f"unknown task type {raw['type']!r}: 'factorial' or 'http-fetch'"
        )
    try:
        spec = _ADAPTER.validate_python(raw)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        field = _field_name(tuple(err.get("loc", ())))
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        raise SubmissionError(422, field, f"{field}: {msg}" if field else msg) from None
    if isinstance(spec, FactorialSpec) and spec.n > max_factorial_n:
        raise SubmissionError(
            422, "n", f"n: must be <= {max_factorial_n} (the server's --max-factorial-n)"
        )
    if (
        isinstance(spec, FetchSpec)
        and spec.hedge_after_ms is not None
        and spec.hedge_after_ms >= spec.timeout_ms
    ):
        raise SubmissionError(422, "hedge_after_ms", "hedge_after_ms: must be less than timeout_ms")
    return spec


def body_fingerprint(body: bytes) -> str:
    """body_fingerprint hashes the canonical form of a body, for Idempotency-Key comparisons.

    Canonical (sorted keys, no whitespace) so that the same JSON written differently still
    counts as the same request.
    """
    canonical = orjson.dumps(orjson.loads(body), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def request_schema() -> dict[str, Any]:
    """request_schema is the OpenAPI schema of the submission body (for /openapi.json)."""
    return _ADAPTER.json_schema(ref_template="#/components/schemas/{model}")
