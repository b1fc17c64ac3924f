"""A script of bench/ imported as a module, for tests of its functions."""

import importlib.util
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"


def load_bench(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
