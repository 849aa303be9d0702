"""dpjax speed benchmarks. ``python -m benchmarks`` runs the whole suite (``__main__.py``);
``benchmarks/bench_*.py`` are single deeper benchmarks; ``harness.py`` holds their shared
pieces. Not part of the installed package."""
