"""Test-only kernel module whose ``build`` ends the process, as a crashing compiler would."""

import os
import sys


def build(knobs):
    """Print a last word on stderr and exit the worker with status 3."""
    print("selftest_crash: exiting on purpose", file=sys.stderr, flush=True)
    os._exit(3)
