"""The embedded demo model now lives in the package: :mod:`gateway_mw.proxy.demo_model`.

This module re-exports it for code that imported ``examples.demo_model``.
"""

from gateway_mw.proxy.demo_model import MODELS, QUESTION, build_app, model_text, responses_input_text, tokens

__all__ = ["MODELS", "QUESTION", "build_app", "model_text", "responses_input_text", "tokens"]
