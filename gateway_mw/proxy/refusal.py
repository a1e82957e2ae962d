"""A bad setting under gunicorn: one line, however many workers find it, and gunicorn stops with 4.

Every worker runs ``app_factory()`` and finds the same bad setting. gunicorn stops when a worker exits
with status 4 ("application failed to load"), and its stop fails with a traceback of its own when a
second one does so while it stops. So, in gunicorn's workers on Linux:

* the first worker to fail claims an abstract socket named after the master, says the line and exits
  4. The claim outlives it: a process started with the socket holds it until the master is gone, for
  a worker may come to the setting after the first has exited (seconds apart, on a busy machine);
* a worker that finds the claim taken says nothing and ends as the master's SIGTERM ends it, once the
  worker that claimed it has exited (the master stops then; before, it would start another worker).
  It does not wait for the SIGTERM itself: aiohttp's worker takes one that comes while the application
  loads and keeps it for a loop that never runs.

Elsewhere, the line and status 4 alone.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from typing import NoReturn

__all__ = ["refuse"]

_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def refuse(message: str) -> NoReturn:
    """``gateway-mw: error: <message>`` on stderr, once per gunicorn master, and exit status 4."""
    if os.environ.get("SERVER_SOFTWARE", "").startswith("gunicorn/") and sys.platform == "linux":
        master = os.getppid()
        claim = _claim(f"\0gateway-mw-refused-{master}")
        if isinstance(claim, int):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _until_gone(claim)
            os.kill(os.getpid(), signal.SIGTERM)
            raise SystemExit(0)  # not reached: SIGTERM has ended the process
        if claim is not None:
            _hand_over(claim, master)
    print(f"gateway-mw: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(4)


def _claim(name: str) -> socket.socket | int | None:
    """The claim, listening (those that find it taken read who has it); or the pid of the worker that
    claimed it; or None when there is no claiming here (each worker says it, then)."""
    while True:
        claim = socket.socket(socket.AF_UNIX)
        try:
            claim.bind(name)
        except OSError as exc:
            claim.close()
            if exc.errno != errno.EADDRINUSE:
                return None
        else:
            claim.listen(socket.SOMAXCONN)
            return claim
        peer = socket.socket(socket.AF_UNIX)
        peer.setblocking(False)  # a full backlog is an answer too, not a wait
        try:
            peer.connect(name)
        except BlockingIOError:
            return 0  # so many have asked that the claimer is surely gone: end at once
        except ConnectionRefusedError:
            time.sleep(0.001)  # claimed a moment ago, not listening yet (or its holder just ended)
            continue
        except OSError:
            return None
        else:
            pid, _, _ = _PEERCRED.unpack(peer.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
            return int(pid)
        finally:
            peer.close()


def _hand_over(claim: socket.socket, master: int) -> None:
    """The claim, held by a process of its own until ``master`` is gone."""
    with contextlib.suppress(OSError):  # no process to spare: the claim lasts as long as this worker
        subprocess.Popen(
            [sys.executable, "-I", __file__, str(master)],
            pass_fds=[claim.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C in a terminal is for gunicorn, not for it
        )


def _until_gone(pid: int) -> None:
    """Return once process ``pid`` has exited (at once when 0 or gone)."""
    if pid <= 0:
        return
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):  # no pidfd (Linux before 5.3): look twice a second
        while os.path.exists(f"/proc/{pid}"):
            time.sleep(0.5)
        return
    try:
        select.select([pidfd], [], [])
    finally:
        os.close(pidfd)


if __name__ == "__main__":  # the holder: it keeps the claim it was started with until the master is gone
    _until_gone(int(sys.argv[1]))
