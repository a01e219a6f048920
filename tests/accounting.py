"""accounting: the one check of a result's books, used by every test that counts requests.

Every request a run intended is exactly one of:

- answered (``requests``): a response came back, whatever it said; an answer with a status
  the run did not expect (``errors.status``) or one that failed a scenario check or extraction
  (``errors.check``) is an answered request *and* an error;
- failed without an answer: the transport errors, ``errors_total - errors.status -
  errors.check`` (connect, timeout, read, write, reset, protocol);
- ``unfinished``: still out at the cut-off;
- ``unsent``: open model, due before the end and never sent.

So ``requests + (errors_total - errors.status - errors.check) + unfinished + unsent ==
intended`` (docs/schema/result.schema.json, ``intended``).
"""

from __future__ import annotations

from typing import Any

#: ANSWERED_ERRORS: the error classes of requests that got a response (counted in requests).
ANSWERED_ERRORS = ("status", "check", "grpc")


def transport_failures(doc: dict[str, Any]) -> int:
    """transport_failures: the failed requests that got no response."""
    return int(doc["errors_total"]) - sum(int(doc["errors"][k]) for k in ANSWERED_ERRORS)


def assert_books(result: Any) -> dict[str, int]:
    """assert_books asserts that a result (a ``redline.Result`` or its ``--json`` document)
    accounts for every intended request exactly once, and returns the four parts."""
    doc = result if isinstance(result, dict) else result.data
    parts = {
        "answered": int(doc["requests"]),
        "transport": transport_failures(doc),
        "unfinished": int(doc["unfinished"]),
        "unsent": int(doc["unsent"]),
    }
    assert all(v >= 0 for v in parts.values()), (parts, doc["errors"])
    assert sum(parts.values()) == doc["intended"], (
        f"books do not balance: {parts} add up to {sum(parts.values())}, "
        f"intended {doc['intended']} (errors {doc['errors']}, errors_total {doc['errors_total']})"
    )
    return parts
