"""Where the middleware's own work on an agent's next request goes: the bytecodes of the gateway's
code it runs per request, by part (the request read, the answer translated, the record's entries
written), end to end through the same proxies and histories as ``instructions.py`` (the 200 KB
history with nothing to change, sent again and again by one client, the answer's reasoning moved).

A count of bytecodes is not time: a bytecode that calls a function, makes an object or looks up a
key costs many times one that compares two integers. It shows which parts of the middleware a
change touches, on any machine, and with ``--functions`` the functions under each part that run the
most of them. Counted with the interpreter's opcode tracing: each request takes several times as
long as without it.

    python bench/bytecodes.py [--requests 10] [--surfaces chat,messages,responses,ollama] [--functions 12]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections import Counter
from types import FrameType
from typing import Any

import aiohttp
import history

_PACKAGE = os.sep + "gateway_mw" + os.sep
_PARTS = {
    "rewrite_request": "the request (read, plan, controls, reading kept)",
    "remember": "the record's entries of the answer",
    "translate_body": "the answer translated",
}
_WARM = 5


def count(surface: str, requests: int) -> tuple[int, Counter[str], Counter[tuple[str, str]]]:
    """The gateway's bytecodes over ``requests`` requests (after :data:`_WARM`), by part, and by
    part and function (each bytecode counted once, in its innermost function)."""
    rewrite = history.to_rewrite(surface, history.SIZES["200 KB"])  # type: ignore[arg-type]
    body, route = history._states(surface, rewrite), history.ROUTES[surface]  # type: ignore[arg-type,index]
    parts: Counter[str] = Counter()
    functions: Counter[tuple[str, str]] = Counter()
    total = 0

    def part_of(frame: FrameType | None) -> str:
        while frame is not None:
            if frame.f_code.co_name in _PARTS and _PACKAGE in frame.f_code.co_filename:
                return frame.f_code.co_name
            frame = frame.f_back
        return "other"

    def opcode(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal total
        if event == "opcode":
            total += 1
            part = part_of(frame)
            parts[part] += 1
            functions[part, f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_code.co_qualname}"] += 1
        return opcode

    def call(frame: FrameType, event: str, arg: Any) -> Any:
        if _PACKAGE not in frame.f_code.co_filename:
            return None
        frame.f_trace_opcodes = True
        return opcode

    async def run() -> None:
        up_runner, up_port = await history._serve(history._upstream())
        runner, port = await history._serve(history._gateway(up_port, True))
        headers = {"Authorization": "Bearer bench"}
        async with aiohttp.ClientSession() as session:
            for n in range(_WARM + requests):
                if n == _WARM:
                    sys.settrace(call)
                async with session.post(f"http://127.0.0.1:{port}{route}", data=body, headers=headers) as resp:
                    assert resp.status == 200, await resp.text()
                    await resp.read()
            sys.settrace(None)
        await runner.cleanup()
        await up_runner.cleanup()

    asyncio.run(run())
    return total, parts, functions


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--surfaces", default="chat,messages,responses,ollama")
    parser.add_argument("--functions", type=int, default=0, help="the functions of each part that run the most")
    args = parser.parse_args()
    n = args.requests
    names = [*_PARTS, "other"]
    print(
        "Bytecodes of the gateway's own code per request, 200 KB history with nothing to change, sent again"
        f" (`python bench/bytecodes.py --requests {n}`):\n"
    )
    heads = [_PARTS.get(name, "the rest (the middleware's own)") for name in names]
    print("| surface | all | " + " | ".join(heads) + " |")
    print("|---|---|" + "---|" * len(names))
    found = {}
    for surface in args.surfaces.split(","):
        total, parts, functions = found[surface] = count(surface, n)
        print(f"| {surface} | {total / n:,.0f} | " + " | ".join(f"{parts[name] / n:,.0f}" for name in names) + " |")
    for surface, (_, _, functions) in found.items() if args.functions else ():
        print(f"\n{surface}:")
        for name in names:
            top = sorted(((c, f) for (p, f), c in functions.items() if p == name), reverse=True)[: args.functions]
            print(f"  {_PARTS.get(name, 'the rest')}: " + ", ".join(f"{f} {c / n:,.0f}" for c, f in top))


if __name__ == "__main__":
    main()
