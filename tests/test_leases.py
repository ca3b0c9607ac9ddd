"""The host's device leases (runner/devices.py) as jobs meet them: a lease is per device, and
a job that dies, even by SIGKILL (no `finally`, no atexit), frees its device at once for
the next job. Real processes hold the leases."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

HOLD = textwrap.dedent("""
    import sys, torch
    from gnnbench.runner import devices
    held = devices.lease(torch.device("cpu"), 1, sys.argv[1], cpu_slots=int(sys.argv[2]))
    print("held", *held.slots, flush=True)
    sys.stdin.readline()
""")

TRY = textwrap.dedent("""
    import sys, time, torch
    from gnnbench.runner import devices
    deadline = time.monotonic() + float(sys.argv[1])
    held = devices.lease(torch.device("cpu"), 1, "next job", cpu_slots=int(sys.argv[2]),
                         should_stop=lambda: time.monotonic() > deadline, poll_s=0.1)
    print("got " + held.slots[0] if held else "gave up", flush=True)
""")


def hold(name: str, slots: int, env: dict) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, name, str(slots)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    assert line[:1] == ["held"], line
    return proc, line[1]


def attempt(wait_s: float, slots: int, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", TRY, str(wait_s), str(slots)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_job_killed_by_sigkill_frees_its_device(tmp_path):
    from gnnbench.runner import devices

    env = {**os.environ, devices.LEASE_DIR_ENV: str(tmp_path / "leases")}
    holder, slot = hold("killed job", 1, env)
    try:
        waiting = attempt(1.0, 1, env)
        assert waiting.stdout.strip().endswith("gave up"), waiting.stdout
        assert "(cpu: killed job (pid" in waiting.stdout
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
    assert holder.returncode == -signal.SIGKILL
    assert attempt(30, 1, env).stdout.strip() == f"got {slot}"
    assert (tmp_path / "leases" / f"{slot}.lock").is_file()  # in the folder the user named


@pytest.mark.slow  # several gnnbench processes or a sweep of jobs: the tier rule
def test_leases_are_per_device(tmp_path):
    """Two slots: a second job gets the free one beside the first; a third waits."""
    from gnnbench.runner import devices

    env = {**os.environ, devices.LEASE_DIR_ENV: str(tmp_path)}
    first, slot = hold("first job", 2, env)
    try:
        second = attempt(30, 2, env)
        assert second.stdout.strip() == f"got {({'cpu-0', 'cpu-1'} - {slot}).pop()}"
        second_holder, other = hold("second job", 2, env)
        try:
            assert attempt(1.0, 2, env).stdout.strip().endswith("gave up")
        finally:
            second_holder.communicate("\n", timeout=60)
        assert attempt(30, 2, env).stdout.strip() == f"got {other}"
    finally:
        first.communicate("\n", timeout=60)


def test_a_lease_released_in_process_is_free_again(tmp_path, monkeypatch):
    from gnnbench.runner import devices

    monkeypatch.setenv(devices.LEASE_DIR_ENV, str(tmp_path))
    with devices.lease(torch.device("cpu"), 1, "job") as held:
        assert held.slots == ["cpu-0"]
        assert devices.lease(torch.device("cpu"), 1, "other", should_stop=lambda: True,
                             say=lambda _: None, poll_s=0) is None
    again = devices.lease(torch.device("cpu"), 1, "job")
    assert again is not None and again.slots == ["cpu-0"]
    again.release()
