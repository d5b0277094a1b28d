"""What the benchmark reads of the whole machine during a window: how busy its cores were,
and how much of that the shared services (Redis, PostgreSQL) took."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench import processes

SPIN = "while True: pass"


@contextmanager
def spinning(executable: str) -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen([executable, "-c", SPIN])
    try:
        yield child
    finally:
        child.kill()
        child.wait(timeout=10)


def spin_until(child: subprocess.Popen[bytes], cpu_seconds: float) -> float:
    """The child's own CPU seconds once it has used at least ``cpu_seconds`` more."""
    start = processes.usage(child.pid).cpu_seconds
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        used = processes.usage(child.pid).cpu_seconds - start
        if used >= cpu_seconds:
            return used
        time.sleep(0.05)
    raise AssertionError("the spinning child got no CPU")


def test_the_cores_busy_count_every_process_on_the_machine() -> None:
    with spinning(sys.executable) as child:
        before = processes.cores_busy_seconds()
        spun = spin_until(child, 0.5)
        after = processes.cores_busy_seconds()
    # Everything else running only adds to it; one tick of rounding either side.
    assert after - before >= spun - 0.05


def test_a_service_is_counted_by_the_command_name_of_its_processes(tmp_path: Path) -> None:
    # A Python named as Redis's server is: the kernel names a process after what it ran.
    impostor = tmp_path / "redis-server"
    impostor.symlink_to(sys.executable)
    with spinning(str(impostor)) as child:
        before = processes.services_cpu_seconds()
        spun = spin_until(child, 0.5)
        after = processes.services_cpu_seconds()
    assert after["Redis"] - before["Redis"] >= spun - 0.05
    assert after["PostgreSQL"] - before["PostgreSQL"] < spun / 2


def test_the_kernels_autogroup_is_read_as_on_off_or_absent(tmp_path: Path) -> None:
    setting = tmp_path / "sched_autogroup_enabled"
    setting.write_text("1\n")
    assert processes.autogroup(setting) == "on"
    setting.write_text("0\n")
    assert processes.autogroup(setting) == "off"
    assert processes.autogroup(tmp_path / "missing") == "absent"


def test_the_machine_readings_say_whether_autogroup_is_on() -> None:
    expected = processes.autogroup()
    assert processes.machine()["sched_autogroup"] == expected
    if processes.AUTOGROUP.exists():
        on = processes.AUTOGROUP.read_text().strip() != "0"
        assert expected == ("on" if on else "off")
