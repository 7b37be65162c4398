"""An indexing process caps glibc's malloc arenas: threads share two heaps instead of one each."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# Eight threads allocate at the same time, then glibc's malloc_stats() reports its arenas on stderr.
THREADS_ALLOCATING = """
import ctypes, sys, threading
from viewlineage.queries.cli import indexing_process, limit_malloc_arenas
print(limit_malloc_arenas() if sys.argv[1] == "limited" else None)
if sys.argv[1] == "indexing process":
    indexing_process()
barrier = threading.Barrier(8)
def allocate():
    kept = [bytearray(4096) for _ in range(256)]
    barrier.wait()
threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads: thread.start()
for thread in threads: thread.join()
ctypes.CDLL("libc.so.6").malloc_stats()
"""

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas")


def _arenas(mode: str, **environment: str) -> tuple[str, int]:
    env = {key: value for key, value in os.environ.items() if key != "MALLOC_ARENA_MAX"} | environment
    done = subprocess.run(
        [sys.executable, "-c", THREADS_ALLOCATING, mode], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.strip(), sum(line.startswith("Arena ") for line in done.stderr.splitlines())


def test_threads_share_two_arenas_once_limited() -> None:
    assert _arenas("unlimited") == ("None", 9)  # the main thread's arena and one per thread
    assert _arenas("limited") == ("True", 2)


def test_an_indexing_process_is_limited() -> None:
    assert _arenas("indexing process") == ("None", 2)


def test_the_operators_malloc_arena_max_wins() -> None:
    assert _arenas("limited", MALLOC_ARENA_MAX="4") == ("False", 4)
