"""The control plane: lines that would signal the host by pattern, by a pid known only when
they run, or by a selection that includes it, and configuration of hookchain set in the
environment however it is quoted, are refused; a line's own jobs and other processes are
not."""

from __future__ import annotations

import os
import sys

import pytest
from wg_escape_table import HOST_IDENTITY
from write_guard._control import control_denial, host_identity
from write_guard._surface import extract_surface

HOST = HOST_IDENTITY


def _denied(line: str) -> bool:
    programs = extract_surface("Bash", {"command": line}).programs
    return control_denial(line, programs, (4242,), HOST) is not None


@pytest.mark.parametrize(
    "line",
    [
        "kill $(pgrep -f hookchain)",
        "kill -9 $(pidof python3)",
        "kill -TERM `cat pidfile`",
        "kill $PID",
        "pgrep -f _launch | xargs kill",
        "pkill -f 'hook.?chain'",
        "pkill -f 'h[o]okchain'",
        "pkill -f _launch",
        "pkill -f 'serve PreToolUse'",
        "pkill -x python3",
        'pkill -u "$(id -u)"',
        "pkill -U 1000",
        "pkill -v nothing-at-all",
        "pkill -F run/host.pid",
        "pkill -f '[oops'",
        'pkill -f "$P"',
        "killall -r 'pyth.n'",
        "killall python3",
        "killall -u me",
        "killall5 -15",
        "skill -KILL -u me",
        "fuser -k run/host.sock",
        "fuser -ki run/host.sock",
        "kill 4242",
        'export HOOK""CHAIN_DISABLE_PLUGINS=write-guard',
        "env HOOK\\CHAIN_DISABLE_PLUGINS=write-guard claude -p hi",
        "WRITE''_GUARD_SANDBOX=off claude -p hi",
        "env -u $'WRITE_GUARD_GIT_GATE' claude -p hi",
    ],
)
def test_a_line_that_may_signal_or_reconfigure_the_host_is_refused(line: str) -> None:
    assert _denied(line), line


@pytest.mark.parametrize(
    "line",
    [
        "sleep 5 & PID=$!; sleep 0.1; kill $PID; wait $PID",
        "sleep 5 & kill $! && wait",
        "sleep 5 & kill %1",
        "pkill -f 'npm run dev'",
        "pkill -x vite",
        "killall node",
        "pgrep -f hookchain",
        "fuser notes.txt",
        "kill 4343",
    ],
)
def test_a_line_that_signals_only_its_own_jobs_or_other_programs_is_not(line: str) -> None:
    assert not _denied(line), line


def test_the_host_identity_is_this_processs_command_line() -> None:
    cmdline, name, *programs = host_identity()
    assert os.path.basename(sys.executable) in cmdline or os.path.basename(sys.argv[0]) in cmdline
    assert name and programs
