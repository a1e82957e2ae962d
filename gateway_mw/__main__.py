"""``python -m gateway_mw``: the gateway, as the ``gateway-mw`` command."""

import sys

from .proxy import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m gateway_mw"))
