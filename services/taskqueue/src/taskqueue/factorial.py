"""Factorial: the CPU-bound task, computed with GMP.

CPython's own `math.factorial` is fine but `str(int)` is quadratic and refuses more than
4,300 digits by default; gmpy2's `fac` and `digits` are sub-quadratic and have no such
limit, so n = 20,000 (77,338 digits) takes about a millisecond.
"""

from __future__ import annotations

import gmpy2


def factorial_digits(n: int) -> str:
    """factorial_digits returns n! in decimal; it runs inside the executor's worker processes."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return gmpy2.fac(n).digits(10)
