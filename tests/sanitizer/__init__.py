"""compute-sanitizer evidence for the project's kernels (issue 17): ``run.py`` (the runner: tools
× shards, logs, a summary table) and ``launch_all.py`` (one small, checked launch per kernel
path, through the public Plans and the ``array_api`` namespace).  Not a test module: nothing
here is collected by pytest, and nothing imports torch or touches a GPU at import time."""
