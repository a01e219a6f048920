"""histogram: the bucket counts of the engine's encoded latency histograms, for the
bootstrap's resampling (:mod:`redline.compare.bootstrap`), which pools windows' counts bucket
by bucket thousands of times and cannot afford a binding merge per resample.

The engine ships each interval's latency as an HdrHistogram (µs, V2 "deflate" encoding,
base64). The binding merges them and reads their quantiles, but not their bucket counts; so
this module reads the encoding itself: it is a published format (HdrHistogram's
``EncodableHistogram`` V2: a zlib-compressed header and zig-zag LEB128 counts, runs of zeros
as negative numbers), small and stable. The live view reads its buckets through the binding
instead; a binding ``histogram_counts`` would let this module go (issue #17's note).
"""

from __future__ import annotations

import base64
import bisect
import itertools
import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from redline.errors import RedlineError

#: The V2 encoding's cookies: the compressed envelope and the payload inside it (their
#: 0xF0 bits carry a word-size flag, 0x10 for V2, which readers ignore).
_COMPRESSED_COOKIE = 0x1C849304
_ENCODING_COOKIE = 0x1C849303
_FLAGS = 0xF0
_HEADER = struct.Struct(">IIIIqqd")


class HistogramError(RedlineError):
    """HistogramError: an encoded histogram that is not HdrHistogram V2 (deflate)."""


@dataclass(frozen=True)
class Layout:
    """Layout is an HdrHistogram's bucket geometry, from its lowest discernible value and
    significant figures: which value each counts index stands for."""

    unit_magnitude: int
    sub_bucket_half_count_magnitude: int

    @classmethod
    def of(cls, lowest: int, sigfig: int) -> Layout:
        """of derives the geometry as HdrHistogram does."""
        largest_single_unit = 2 * 10**sigfig
        sub_bucket_count_magnitude = math.ceil(math.log2(largest_single_unit))
        return cls(
            unit_magnitude=max(0, int(math.floor(math.log2(max(lowest, 1))))),
            sub_bucket_half_count_magnitude=max(sub_bucket_count_magnitude, 1) - 1,
        )

    def index_of(self, value: int) -> int:
        """index_of is the counts index that ``value`` is recorded at."""
        half = 1 << self.sub_bucket_half_count_magnitude
        sub_bucket_mask = (2 * half - 1) << self.unit_magnitude
        pow2_ceiling = (value | sub_bucket_mask).bit_length()
        bucket = pow2_ceiling - self.unit_magnitude - (self.sub_bucket_half_count_magnitude + 1)
        sub_bucket = value >> (bucket + self.unit_magnitude)
        return ((bucket + 1) << self.sub_bucket_half_count_magnitude) + (sub_bucket - half)

    def value_at(self, index: int) -> int:
        """value_at is the lowest value recorded at counts index ``index``."""
        half_magnitude = self.sub_bucket_half_count_magnitude
        bucket = (index >> half_magnitude) - 1
        sub_bucket = (index & ((1 << half_magnitude) - 1)) + (1 << half_magnitude)
        if bucket < 0:
            sub_bucket -= 1 << half_magnitude
            bucket = 0
        return sub_bucket << (bucket + self.unit_magnitude)


@dataclass(frozen=True)
class Decoded:
    """Decoded is one histogram's layout and its non-zero counts as (index, count) pairs."""

    layout: Layout
    counts: list[tuple[int, int]]

    @property
    def total(self) -> int:
        """total is how many values were recorded."""
        return sum(c for _, c in self.counts)


def decode(encoded: str) -> Decoded:
    """decode reads one base64 V2-deflate histogram (as the snapshots carry it)."""
    try:
        raw = base64.b64decode(encoded, validate=True)
        cookie, length = struct.unpack_from(">II", raw)
        if cookie & ~_FLAGS != _COMPRESSED_COOKIE:
            raise HistogramError(f"not a compressed V2 histogram (cookie {cookie:#x})")
        payload = zlib.decompress(raw[8 : 8 + length])
        cookie, size, _offset, sigfig, lowest, _highest, _ratio = _HEADER.unpack_from(payload)
    except (ValueError, struct.error, zlib.error) as e:
        raise HistogramError(f"cannot read the histogram: {e}") from None
    if cookie & ~_FLAGS != _ENCODING_COOKIE:
        raise HistogramError(f"not a V2 histogram payload (cookie {cookie:#x})")
    body = payload[_HEADER.size : _HEADER.size + size]
    return Decoded(Layout.of(lowest, sigfig), list(_counts(body)))


def _counts(body: bytes) -> list[tuple[int, int]]:
    """_counts reads the zig-zag LEB128 counts (at most 9 bytes each, the ninth holding 8
    bits); a negative number skips that many empty indices."""
    out: list[tuple[int, int]] = []
    index, pos, n = 0, 0, len(body)
    while pos < n:
        value, shift = 0, 0
        for i in range(9):
            if pos >= n:
                raise HistogramError("truncated histogram counts")
            byte = body[pos]
            pos += 1
            if i == 8:
                value |= byte << shift
                break
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        count = (value >> 1) ^ -(value & 1)
        if count < 0:
            index += -count
        else:
            if count:
                out.append((index, count))
            index += 1
    return out


def cumulative(decoded: Decoded, bounds_us: Sequence[int]) -> list[int]:
    """cumulative is, for each bound (µs, ascending), how many values lie at or below it."""
    limits = [decoded.layout.index_of(max(int(b), 0)) for b in bounds_us]
    per_bucket = [0] * (len(limits) + 1)
    for index, count in decoded.counts:
        per_bucket[bisect.bisect_left(limits, index)] += count
    return list(itertools.accumulate(per_bucket[:-1]))
