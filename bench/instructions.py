"""The request side end to end, counted in machine instructions: the same proxies and histories as
``history.py --end-to-end``, each run under valgrind's instruction counter, so that a change is
measured without the spread of a shared machine (whose timings of one build move by more than a
tenth from run to run, more than most changes are worth); and the history with nothing to change
through a middleware that passes histories on (``history_reasoning="pass"``: the controls read alone).

Each figure is a difference of two runs of one process (client, proxy and upstream): the same
start and the same five warming requests in both, then ``--requests`` more in one of them; what
the second run counted more, divided by ``--requests``, is what one request costs. Hash
randomisation is off (``PYTHONHASHSEED=0``): a run counts the same to a few thousandths each time.

The C library's memcpy, memmove and memset are counted apart: for a large block they move bytes
with ``rep movsb``/``rep stosb``, which valgrind counts once per byte, so that their counts say how
many bytes were moved rather than how much work the processor did (plain forwarding's copies of a
200 KB body count more than all of its Python code). The figures compared are the instructions
outside them; the bytes the two runs moved stand beside them.

Instructions are not time: they leave out the kernel's copies of the body (most of what plain
forwarding costs) and the cache misses a request's work meets after the body went through, which
make each of the middleware's operations dearer end to end than in a loop (``cold.py``). What they
show is where a change adds or removes work, and how much, on any machine.

    python bench/instructions.py [--requests 40] [--surfaces responses,messages] [--against DIR]

``--against DIR``: the middleware of the checkout at ``DIR`` (an earlier version; the same
benchmark code, run from this checkout) counted beside this one's. Needs ``valgrind`` on the PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

_HERE = Path(__file__).resolve().parent
_WARM = 5
_SMALL = "small"
_PASSED = "passed"
_STATES = {"unchanged": "nothing to change", "rewrite": "to rewrite", _PASSED: "history passed on, controls read"}


def _child(surface: str, state: str, which: str, requests: int) -> None:
    """One measured process: the proxy ``which`` (``plain`` or ``middleware``) forwarding the history
    of ``surface`` in ``state`` (or the small streamed request), ``_WARM + requests`` times."""
    import aiohttp
    import history

    if surface == _SMALL:
        route, body = history._SMALL_ROUTE, history._SMALL.encode()
    else:
        rewrite = history.to_rewrite(surface, history.SIZES["200 KB"])  # type: ignore[arg-type]
        body = rewrite if state == "rewrite" else history._states(surface, rewrite)  # type: ignore[arg-type]
        # ``passed``: the same history, nothing to change, through a middleware that passes histories on
        route = history.ROUTES[surface]  # type: ignore[index]

    async def run() -> None:
        up_runner, up_port = await history._serve(history._upstream())
        gateway = history._gateway(up_port, which == "middleware", history_passed=state == _PASSED)
        runner, port = await history._serve(gateway)
        headers = {"Authorization": "Bearer bench"}
        async with aiohttp.ClientSession() as session:
            for _ in range(_WARM + requests):
                async with session.post(f"http://127.0.0.1:{port}{route}", data=body, headers=headers) as resp:
                    assert resp.status == 200, await resp.text()
                    await resp.read()
        await runner.cleanup()
        await up_runner.cleanup()

    asyncio.run(run())


_MOVES = re.compile(r"__(?:memcpy|memmove|mempcpy|memset)\w*")
"""The C library's routines that move (or set) bytes, counted per byte by valgrind (``rep movsb``)."""


class Count(NamedTuple):
    work: float
    """Instructions outside :data:`_MOVES`."""
    moved: float
    """Instructions inside them: about one per byte moved or set."""


def _count(tree: Path, surface: str, state: str, which: str, requests: int) -> Count:
    """The instructions of one child process, the package imported from ``tree``."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": f"{tree}{os.pathsep}{_HERE}"}
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "counts"
        command = [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            f"--cachegrind-out-file={out}",
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            surface,
            state,
            which,
            str(requests),
        ]
        subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        return _read_counts(out)


def _read_counts(path: Path) -> Count:
    """The totals of a cachegrind output file (its only event: ``Ir``), the moving routines apart."""
    work = moved = 0
    moving = False  # the counts after a ``fn=`` line are that function's
    with path.open() as lines:
        for line in lines:
            if line[0].isdigit():
                count = int(line.split()[1])
                if moving:
                    moved += count
                else:
                    work += count
            elif line.startswith("fn="):
                moving = _MOVES.fullmatch(line[3:].strip()) is not None
    if work == 0:
        raise RuntimeError(f"valgrind counted no instructions in {path}")
    return Count(work, moved)


def table(requests: int, surfaces: list[str], against: Path | None) -> str:
    trees = {"this checkout": _HERE.parent} | ({f"`{against}`": against} if against is not None else {})
    rows = [(surface, state) for surface in surfaces for state in _STATES] + [(_SMALL, "")]
    runs = [("plain forwarding", _HERE.parent, "plain")] + [(name, tree, "middleware") for name, tree in trees.items()]
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:  # each child process is one thread's
        counts = {
            (run, row, n): pool.submit(_count, tree, *row, which, n)
            for run, tree, which in runs
            for row in rows
            for n in (0, requests)
        }
        per_request = {
            (run, row): _less(counts[run, row, requests].result(), counts[run, row, 0].result(), requests)
            for run, _, _ in runs
            for row in rows
        }
    head = " | ".join(f"with the middleware of {name} | ratio" for name in trees)
    out = [
        f"Instructions per request end to end (client, proxy and upstream in one process), thousands, outside"
        f" the C library's byte moves (memcpy, memmove, memset: beside them, in brackets, counted once per byte);"
        f" the difference of a run of {_WARM} and one of {_WARM + requests} requests (`python bench/instructions.py"
        f" --requests {requests}`):",
        "",
        f"| request | plain forwarding | {head} |",
        "|---|---|" + "---|---|" * len(trees),
    ]
    for row in rows:
        surface, state = row
        name = "small request, 20 events streamed" if surface == _SMALL else f"{surface}, 200 KB, {_STATES[state]}"
        plain = per_request["plain forwarding", row]
        cells = [_cell(plain)]
        for tree_name in trees:
            count = per_request[tree_name, row]
            cells += [_cell(count), f"{count.work / plain.work:.3f}"]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _less(more: Count, fewer: Count, requests: int) -> Count:
    """What the run of ``requests`` more counted more, per request."""
    return Count((more.work - fewer.work) / requests, (more.moved - fewer.moved) / requests)


def _cell(count: Count) -> str:
    return f"{count.work / 1e3:,.0f} ({count.moved / 1e3:,.0f})"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        surface, state, which, requests = sys.argv[2:6]
        _child(surface, state, which, int(requests))
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--surfaces", default="chat,messages,responses,ollama")
    parser.add_argument("--against", type=Path, help="a checkout whose middleware is counted beside this one's")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("bench/instructions.py needs valgrind on the PATH (apt install valgrind)")
    print(table(args.requests, args.surfaces.split(","), args.against))


if __name__ == "__main__":
    main()
