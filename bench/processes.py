"""The benchmark's child processes (the fake providers, the app, a profiler) and what the
kernel says about them: CPU seconds and resident memory from ``/proc``.

Every child runs in its own process group, is remembered, and is stopped (TERM, then KILL)
when the benchmark ends, however it ends.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_children: list[subprocess.Popen[bytes]] = []


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def spawn(
    args: list[str], *, env: dict[str, str] | None = None, log: Path | None = None
) -> subprocess.Popen[bytes]:
    out = open(log, "wb") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(
        args,
        cwd=REPO_ROOT,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own group: Ctrl-C reaches us, and we stop it ourselves
    )
    _children.append(process)
    return process


def stop(process: subprocess.Popen[bytes], *, grace: float = 5.0) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=grace)
    if process in _children:
        _children.remove(process)


def stop_all() -> None:
    for process in reversed(list(_children)):
        stop(process)


atexit.register(stop_all)


def wait_until_ready(url: str, process: subprocess.Popen[bytes], *, timeout: float = 60) -> None:
    """Poll ``url`` until it answers 200; fail early if the process died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f}s")


def wait_for_log(
    path: Path, fragment: str, process: subprocess.Popen[bytes], *, timeout: float = 60
) -> None:
    """Wait until the process's log file holds ``fragment``; fail early if it died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and fragment in path.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        time.sleep(0.1)
    raise RuntimeError(f"{path.name} did not say {fragment!r} within {timeout:.0f}s")


def python(*args: str) -> list[str]:
    return [sys.executable, *args]


# -- /proc ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """A process's CPU seconds (user + system) and resident memory (bytes) at one moment."""

    at: float
    cpu_seconds: float
    rss_bytes: int


def _command_and_cpu_seconds(pid: int | str) -> tuple[str, float]:
    """A process's command name and CPU seconds (user + system), from ``/proc/<pid>/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # The command name may hold spaces and parentheses: it ends at the last ')'.
    command = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    return command, (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def usage(pid: int) -> Usage:
    _, cpu_seconds = _command_and_cpu_seconds(pid)
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
            break
    return Usage(time.monotonic(), cpu_seconds, rss)


def cores_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot, all cores together: user,
    nice, system, interrupts and steal; idle and waiting for I/O are not busy."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / _CLOCK_TICKS


# The shared services a cluster runs on, by the command name their processes carry.
SERVICES = {"Redis": ("redis-server",), "PostgreSQL": ("postgres", "postmaster")}


def services_cpu_seconds() -> dict[str, float]:
    """CPU seconds every process of each of ``SERVICES`` has used (the machine's own Redis
    and PostgreSQL: whatever else uses them counts too). A process that ends between two
    readings takes its seconds with it, so a difference of two readings is a lower bound."""
    totals = dict.fromkeys(SERVICES, 0.0)
    owner = {command: name for name, commands in SERVICES.items() for command in commands}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            command, cpu_seconds = _command_and_cpu_seconds(entry.name)
            if (name := owner.get(command)) is not None:
                totals[name] += cpu_seconds
    return totals


def cpu_seconds_between(before: dict[str, Usage], after: dict[str, Usage]) -> dict[str, float]:
    """CPU seconds each named process used between two readings (those read both times)."""
    return {
        name: round(after[name].cpu_seconds - before[name].cpu_seconds, 3)
        for name in before
        if name in after
    }


def _child_pids(pid: int) -> list[int]:
    return [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]


def is_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (exited, waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] != "Z"


def child_running(pid: int, module: str) -> int | None:
    """The child of ``pid`` whose command line runs ``module``, if there is one."""
    for child in _child_pids(pid):
        with contextlib.suppress(OSError):
            if module in Path(f"/proc/{child}/cmdline").read_text():
                return child
    return None


def python_child(pid: int) -> int:
    """The pid that runs Python under a wrapper such as ``py-spy record -- python …``."""
    return next(iter(_child_pids(pid)), pid)


# Linux's autogroup: when on, the scheduler shares the cores between sessions first (each
# process the bench starts has a session of its own), then between a session's threads.
AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")


def autogroup(setting: Path = AUTOGROUP) -> str:
    """Whether the kernel's autogroup is on: "on", "off", or "absent" (not Linux, or a kernel
    built without it). It moves the cluster's figures: see ``bench/HISTORY.md``, 2026-12-06."""
    try:
        value = setting.read_text().strip()
    except OSError:
        return "absent"
    return "off" if value == "0" else "on"


def machine() -> dict[str, str]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    return {
        "cpus": str(os.cpu_count()),
        "cpu_model": cpu,
        "memory": f"{mem_kb / 1024 / 1024:.1f} GiB",
        "python": sys.version.split()[0],
        "load_average_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "sched_autogroup": autogroup(),
    }
