"""exposition: Prometheus text exposition read with prometheus_client's own parser, once per
page shape.

An exporter serves the same page each scrape but for its values: the same comment lines, the
same series in the same order. prometheus_client's parser is pure Python and reads a page
character by character, 7-9 ms of CPU for a page of 200 series on a busy 2-core box
(bench/results/watch.md): a part watched each second cost the client more than the rest of
the watching together. :class:`Pages` parses a page with the parser, and keeps what it read
from every line but the value (the sample's name and labels, the family's names and types):
the next page whose lines differ from that one's only in their values is read by taking the
value off each line. Any other page (a series born, a family retyped, a line the split below
does not read as name-and-value) is parsed whole again; so is a page whose values, read by
the split, disagree with what the parser read from the same page (the shape is then never
taken as known).

How a line is split (the text format: ``name{labels} value [timestamp]``): a line with a
``{`` ends its labels at its last ``}`` (a value or a timestamp holds none); a line without
one ends its name at its first blank. What is left is one or two words; anything else is
left to the parser.
"""

from __future__ import annotations

import math
import urllib.request
from dataclasses import dataclass

#: Sample: one sample of a page: its name, its labels and its value.
Sample = tuple[str, dict[str, str], float]


@dataclass(frozen=True)
class Scraped:
    """Scraped is one read of an endpoint: its samples (name, labels, value) and every series
    name it declares (a family's samples' names, a counter's ``_total`` among them, also
    for a family with no sample yet)."""

    samples: list[Sample]
    names: frozenset[str] = frozenset()
    #: counters: the sample names of the families typed counter (postgres_exporter's have no
    #: ``_total`` suffix).
    counters: frozenset[str] = frozenset()


def parse(text: str) -> Scraped:
    """parse reads Prometheus text exposition with prometheus_client's own parser."""
    from prometheus_client.parser import text_string_to_metric_families

    samples: list[Sample] = []
    names: set[str] = set()
    counters: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        if family.type == "counter":
            names.add(f"{family.name}_total")
        for s in family.samples:
            names.add(s.name)
            if family.type == "counter" and not s.name.endswith("_created"):
                counters.add(s.name)
            samples.append((s.name, dict(s.labels), float(s.value)))
    return Scraped(samples, frozenset(names), frozenset(counters))


def split(text: str) -> tuple[list[str], list[str]] | None:
    """split is a page's shape (each line without its value: comments whole, a sample's name
    and labels) and its samples' values as written, in line order; None when a sample line
    is not a name and one or two words after it."""
    shape: list[str] = []
    values: list[str] = []
    for raw in text.split("\n"):  # as the parser reads lines
        line = raw.strip()
        if not line or line[0] == "#":
            shape.append(line)
            continue
        if "{" in line:
            cut = line.rfind("}") + 1
        else:
            blank = [i for i in (line.find(" "), line.find("\t")) if i > 0]
            cut = min(blank) if blank else 0
        words = line[cut:].split()
        if cut <= 0 or not 1 <= len(words) <= 2 or "_" in words[0]:
            return None
        shape.append(line[:cut])
        values.append(words[0])
    return shape, values


class Pages:
    """Pages reads one endpoint's pages: the parser for a page of a new shape, its values
    alone for a page of the last one's (see the module's text). ``parsed`` counts the pages
    the parser read whole, ``reused`` those read by their values."""

    def __init__(self) -> None:
        self._shape: list[str] | None = None
        self._template: list[tuple[str, dict[str, str]]] = []
        self._names: frozenset[str] = frozenset()
        self._counters: frozenset[str] = frozenset()
        self.parsed = 0
        self.reused = 0

    def parse(self, text: str) -> Scraped:
        """parse reads one page (errors as the parser's: a ValueError)."""
        got = split(text)
        if got is not None and got[0] == self._shape:
            try:
                values = [float(v) for v in got[1]]
            except ValueError:
                values = []  # the parser says what is wrong with it
            if len(values) == len(self._template):
                self.reused += 1
                samples = [(n, lb, v) for (n, lb), v in zip(self._template, values, strict=True)]
                return Scraped(samples, self._names, self._counters)
        scraped = parse(text)
        self.parsed += 1
        self._shape = None
        if got is not None and _agree(got, scraped.samples):
            self._shape = got[0]
            self._template = [(n, lb) for n, lb, _ in scraped.samples]
            self._names, self._counters = scraped.names, scraped.counters
        return scraped


def _agree(got: tuple[list[str], list[str]], samples: list[Sample]) -> bool:
    """_agree: the split's sample lines are the parser's samples one for one, in order: each
    line's name the sample's (a counter's given ``_total``), its value the sample's."""
    keys = [k for k in got[0] if k and k[0] != "#"]
    if len(keys) != len(samples) or len(got[1]) != len(samples):
        return False
    for key, text, (name, _, parsed) in zip(keys, got[1], samples, strict=True):
        written = key.partition("{")[0].strip()
        if name not in (written, f"{written}_total"):
            return False
        try:
            v = float(text)
        except ValueError:
            return False
        if v != parsed and not (math.isnan(v) and math.isnan(parsed)):
            return False
    return True


def fetch(url: str, timeout_s: float) -> str:
    """fetch is an endpoint's page as text."""
    with urllib.request.urlopen(url, timeout=timeout_s) as r:  # noqa: S310 (http(s) checked)
        return str(r.read().decode("utf-8", errors="replace"))


def scrape(url: str, timeout_s: float) -> Scraped:
    """scrape fetches a Prometheus text endpoint and parses it."""
    return parse(fetch(url, timeout_s))
