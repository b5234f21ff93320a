"""Error bounds of the FFT GPU tests: FFTs are norm-wise stable, so a result element is allowed
``C·(log2 N + 1)·eps`` relative to max(|ref|, rms(ref)); sizes with a prime factor > 127 run
Bluestein's algorithm in cuFFT (three FFTs of a padded length ~4n and chirp products) and get
three times that, at 4n."""

import math

from tests._checks import eps

C = 6.0


def _smooth(n: int) -> bool:
    """True when every prime factor of n is <= 127 (cuFFT's direct radices); other sizes run
    Bluestein's algorithm (FFTs of a padded length >= 2n - 1 and chirp products)."""
    p = 2
    while p * p <= n:
        while n % p == 0:
            n //= p
        p += 1
    return n <= 127


def bound(lengths, dtype_name: str) -> float:
    """Relative (to the data's rms) per-element bound of an FFT of ``lengths`` in dtype:
    C·(log2 N + 1)·eps, with Bluestein sizes charged three FFTs of length 4n."""
    n = max(math.prod(lengths), 2)
    k = 1.0 if all(_smooth(m) for m in lengths) else 3.0
    if k > 1.0:
        n *= 4
    real = "float32" if dtype_name in ("complex64", "float32") else "float64"
    return k * C * (math.log2(n) + 1) * eps(real)
