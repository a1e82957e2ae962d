"""The gateway: examples/proxy.py and gateway-mw over real HTTP, its operator features, processes, deployment."""
