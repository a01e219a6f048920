"""functions: values the engine computes per request, for a flow to use where ordinary Python
would compute a constant at compile time (see :mod:`~redline.scenario.divergence`).

Two kinds, both methods of the flow's ``u``:

- *functions* of other values (``u.b64encode(f"{row['user']}:{row['pw']}")``,
  ``u.hmac_sha256(KEY, body)``): a Var that stands for a function part of a template,
  computed wherever it lands, its arguments rendered as they are and its result escaped for
  the place (a header, a path, a JSON string). They compose.
- *draws* (``u.uuid4()``, ``u.random_int(1, 6)``, ``u.now()``): a ``set`` step, run when the
  flow reaches it, so that every use of the value within the iteration (the header and the
  signed text that holds it) sees the same one; a draw inside ``u.loop`` is drawn each round.
"""

from __future__ import annotations

from typing import Any

from redline.scenario.template import Template, Var, current, json_template, parts

_ENCODINGS = ("hex", "base64")
_TIME_FORMATS = ("unix", "unix_ms", "rfc3339", "rfc3339_ms")


class Functions:
    """Functions is the part of :class:`~redline.scenario.user.User` that makes values the
    engine computes per request. docs/scenarios.md (Functions) lists them."""

    # What the user class provides.
    def _error(self, message: str) -> Exception:
        raise NotImplementedError

    def _use(self, template: Template) -> Template:
        raise NotImplementedError

    def _fresh(self, what: str) -> str:
        raise NotImplementedError

    def _define(self, name: str) -> None:
        raise NotImplementedError

    def _add(self, step: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    # -- plumbing ----------------------------------------------------------------------------
    def _arg(self, value: Any) -> Template:
        if isinstance(value, (bytes, bytearray)):
            try:
                value = bytes(value).decode("utf-8")
            except UnicodeDecodeError:
                raise self._error(
                    "a function's argument must be text: give binary data in base64 and "
                    "decode it with u.b64decode(...)"
                ) from None
        return self._use(parts(value))

    def _call(self, label: str, fn: str, *args: Any, **opts: Any) -> Var:
        spec: dict[str, Any] = {"fn": fn, "args": [self._arg(a) for a in args]}
        spec.update({k: v for k, v in opts.items() if v is not None})
        return Var(current().register(spec, label))

    def _encoding(self, encoding: str) -> str:
        if encoding not in _ENCODINGS:
            raise self._error(f"encoding must be 'hex' or 'base64', got {encoding!r}")
        return encoding

    def _draw(self, fn: str, *args: Any) -> Var:
        name = self._fresh(fn + "_")
        self._add({"step": "set", "var": name, "fn": fn, "args": list(args)})
        self._define(name)
        return Var(name)

    # -- functions ---------------------------------------------------------------------------
    def b64encode(self, value: Any, urlsafe: bool = False) -> Var:
        """b64encode: ``value`` (text, as UTF-8) in base64, standard with padding, or
        URL-safe without padding (JWT's) when ``urlsafe``."""
        fn = "base64url" if urlsafe else "base64"
        return self._call("b64encode", fn, value)

    def b64decode(self, value: Any) -> Var:
        """b64decode: ``value`` decoded from base64 (either alphabet, padding or not); text
        that is not base64 fails the request that uses it, with that reason."""
        return self._call("b64decode", "base64_decode", value)

    def url_encode(self, value: Any) -> Var:
        """url_encode: ``value`` percent-encoded, all but ``A-Z a-z 0-9 - . _ ~``."""
        return self._call("url_encode", "url_encode", value)

    def hex(self, value: Any) -> Var:
        """hex: ``value``'s bytes in lower-case hexadecimal."""
        return self._call("hex", "hex", value)

    def sha256(self, value: Any, encoding: str = "hex") -> Var:
        """sha256: the SHA-256 digest of ``value``, in hex or base64."""
        return self._call("sha256", "sha256", value, encoding=self._encoding(encoding))

    def sha1(self, value: Any, encoding: str = "hex") -> Var:
        """sha1: the SHA-1 digest of ``value``, in hex or base64."""
        return self._call("sha1", "sha1", value, encoding=self._encoding(encoding))

    def hmac_sha256(self, key: Any, value: Any, encoding: str = "hex") -> Var:
        """hmac_sha256: the HMAC-SHA256 of ``value`` under ``key``, in hex or base64."""
        enc = self._encoding(encoding)
        return self._call("hmac_sha256", "hmac_sha256", key, value, encoding=enc)

    def hmac_sha1(self, key: Any, value: Any, encoding: str = "hex") -> Var:
        """hmac_sha1: the HMAC-SHA1 of ``value`` under ``key``, in hex or base64."""
        enc = self._encoding(encoding)
        return self._call("hmac_sha1", "hmac_sha1", key, value, encoding=enc)

    def upper(self, value: Any) -> Var:
        """upper: ``value`` in upper case (Unicode, as Python's str.upper)."""
        return self._call("upper", "upper", value)

    def lower(self, value: Any) -> Var:
        """lower: ``value`` in lower case (Unicode)."""
        return self._call("lower", "lower", value)

    def length(self, value: Any) -> Var:
        """length: the number of characters of ``value`` (Python's len of the text)."""
        return self._call("length", "length", value)

    def pad(self, value: Any, width: int, fill: str = "0") -> Var:
        """pad: ``value`` right-aligned to ``width`` characters with ``fill`` on the left
        (``u.pad(u.vu, 6)``: ``000042``), what ``f"{n:06d}"`` would do."""
        if not isinstance(width, int) or not 0 <= width <= 4096:
            raise self._error(f"pad: width must be an integer from 0 to 4096, got {width!r}")
        if not isinstance(fill, str) or len(fill) != 1:
            raise self._error(f"pad: fill must be one character, got {fill!r}")
        return self._call("pad", "pad", value, width=width, fill=fill)

    def json_encode(self, value: Any) -> Var:
        """json_encode: ``value`` (a dict, a list, text...) as JSON text, the run-time values
        in it escaped as JSON strings: the same bytes as ``json=value`` sends, to sign or to
        send as ``body=``."""
        try:
            doc = json_template(value)
        except TypeError as e:
            raise self._error(f"json_encode: {e}") from None
        spec = {"fn": "json", "args": [self._use(doc)]}
        return Var(current().register(spec, "json_encode"))

    # -- draws -------------------------------------------------------------------------------
    def uuid4(self) -> Var:
        """uuid4: a random UUID (version 4), drawn when the flow reaches this call."""
        return self._draw("uuid4")

    def random_int(self, low: int, high: int) -> Var:
        """random_int: an integer uniform in ``low..high`` (both included), drawn when the
        flow reaches this call."""
        if not (isinstance(low, int) and isinstance(high, int) and low <= high):
            raise self._error(f"random_int needs integers low <= high, got {low!r}, {high!r}")
        if not -(2**63) <= low <= high < 2**63:
            raise self._error("random_int: the bounds must fit in 64 bits")
        return self._draw("random_int", low, high)

    def random_string(self, length: int, alphabet: str | None = None) -> Var:
        """random_string: ``length`` characters drawn from ``alphabet`` (default: letters
        and digits), when the flow reaches this call."""
        if not isinstance(length, int) or not 1 <= length <= 4096:
            raise self._error(f"random_string: length must be 1 to 4096, got {length!r}")
        if alphabet is None:
            return self._draw("random_string", length)
        if not isinstance(alphabet, str) or not alphabet:
            raise self._error("random_string: the alphabet must be non-empty text")
        return self._draw("random_string", length, alphabet)

    def now(self, format: str = "unix") -> Var:  # noqa: A002 (the word users know)
        """now: the time when the flow reaches this call: ``unix`` (seconds), ``unix_ms``,
        ``rfc3339`` (``2026-11-28T06:30:00Z``) or ``rfc3339_ms``."""
        if format not in _TIME_FORMATS:
            raise self._error(f"now: format must be one of {', '.join(_TIME_FORMATS)}")
        return self._draw("now", format)
