"""Tests for redline.exports: the packages' lazily imported public names."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    "package, name, module",
    [
        ("redline.compare", "compare", "redline.compare.comparison"),
        ("redline.compare", "Figure", "redline.compare.figures"),
        ("redline.experiment", "parse_vary", "redline.experiment.configurations"),
        ("redline.live", "parse_address", "redline.live.address"),
        ("redline.cli", "main", "redline.cli.commands"),
    ],
)
def test_a_public_name_comes_from_its_module(package, name, module):
    got = getattr(importlib.import_module(package), name)
    assert got is getattr(importlib.import_module(module), name)


@pytest.mark.parametrize(
    "package", ["redline.compare", "redline.experiment", "redline.live", "redline.cli"]
)
def test_an_unknown_name_is_an_attribute_error(package):
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nope'"):
        _ = importlib.import_module(package).nope
    assert not hasattr(importlib.import_module(package), "nope")
