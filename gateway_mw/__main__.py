"""``python -m gateway_mw`` and the ``gateway-mw`` command: the gateway, or one line naming the extra it
needs when the library was installed without it."""

from __future__ import annotations

import sys

from .extras import MissingExtra


def main(prog: str = "gateway-mw") -> int:
    try:
        from .proxy import main as gateway
    except MissingExtra as missing:
        print(f"{prog}: {missing}", file=sys.stderr)
        return 2
    return gateway(prog=prog)


if __name__ == "__main__":
    sys.exit(main(prog="python -m gateway_mw"))
