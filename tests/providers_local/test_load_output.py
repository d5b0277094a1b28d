"""Loading the embedded model leaves the rest of the process's output alone: what other
threads log meanwhile (a worker's "took debate" lines, the server's warnings) all arrives.

llama-cpp-python quiets a load by pointing the whole process's stdout and stderr at
/dev/null until it is done; a worker's log lines written in that window were lost."""

from __future__ import annotations

import subprocess
import sys

from app.config import PROJECT_ROOT

# A process of its own: the first model a process loads also initialises llama.cpp's
# backend, which was quieted the same way.
LOAD_WHILE_LOGGING = """
import logging, sys, threading, time
from app.providers import local

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
log = logging.getLogger("ticker")
loading, sent = threading.Event(), []

def tick():
    while not sent or loading.is_set():
        sent.append(len(sent))
        log.info("tick %d", sent[-1])
        time.sleep(0.002)

loading.set()
ticker = threading.Thread(target=tick)
ticker.start()
local._load(local.bundled_model_path(), 512, 1)
loading.clear()
ticker.join()
print(len(sent))
"""


def test_lines_logged_while_the_model_loads_all_reach_stderr() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOAD_WHILE_LOGGING],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    sent = int(done.stdout.strip().splitlines()[-1])
    received = [line for line in done.stderr.splitlines() if line.startswith("tick ")]
    assert sent > 20, "the load was too quick to overlap the ticks"
    assert received == [f"tick {number}" for number in range(sent)], (
        f"{sent - len(received)} of {sent} lines lost"
    )
