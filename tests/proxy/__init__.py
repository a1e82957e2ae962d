"""Helpers for the gateway's tests that run it as its own processes."""
