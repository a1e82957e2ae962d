"""The deployment files and what the docs show of them: docs/deploy.md shows every manifest under
deploy/ as it is (each after a comment naming its file), the container recipe runs the gateway's
gunicorn configuration as a named user, and the manifests set what the gateway reads. (.ci/container
builds and runs the image, and validates the manifests against Kubernetes' schemas.)"""

from __future__ import annotations

import re
from pathlib import Path

from gateway_mw.proxy.settings import PROXY_FIELDS, load_settings

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "deploy.md"
INCLUDED = re.compile(r"^<!-- (deploy/\S+) -->\n```yaml\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def test_deploy_md_shows_every_manifest_as_it_is() -> None:
    shown = dict(INCLUDED.findall(DOC.read_text()))
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "deploy").rglob("*.yaml"))
    assert sorted(shown) == files
    for path, text in shown.items():
        assert text == (ROOT / path).read_text(), f"docs/deploy.md shows another {path}"


def test_the_manifests_set_only_variables_the_gateway_reads() -> None:
    text = "".join(p.read_text() for p in (ROOT / "deploy").rglob("*.yaml"))
    env = dict(re.findall(r"^\s+- \{name: ([A-Z_]+), value: \"?([^\"}]*)\"?\}", text, re.MULTILINE))
    gateway = {name: value for name, value in env.items() if name.startswith(("GATEWAY_", "THINK_EXTRACT_"))}
    assert gateway == {
        "GATEWAY_UPSTREAM": "http://vllm:8000",
        "GATEWAY_CLIENT_KEYS_FILE": "/etc/gateway/keys/keys",
        "GATEWAY_DRAIN_DELAY": "5",
        "GATEWAY_SHUTDOWN_TIMEOUT": "30",
        "THINK_EXTRACT_MESSAGES_POLICY": "unsigned",
    }
    settings, _ = load_settings([], {k: v for k, v in gateway.items() if k != "GATEWAY_CLIENT_KEYS_FILE"})
    assert (settings.upstream, settings.drain_delay, settings.shutdown_timeout) == ("http://vllm:8000", 5.0, 30.0)
    # The reasoning record's store is named, commented, for when the gateway has the setting.
    assert '# - {name: THINK_EXTRACT_REASONING_STORE, value: "redis://gateway-redis:6379/0"}' in text
    assert "enableServiceLinks: false" in (ROOT / "deploy" / "deployment.yaml").read_text()


def test_the_container_runs_the_gateways_gunicorn_configuration_as_a_named_user() -> None:
    recipe = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["gunicorn", "-c", "python:gateway_mw.proxy.gunicorn_conf"]' in recipe
    assert "useradd --uid 10001 --gid gateway --create-home --home-dir /home/gateway" in recipe
    assert "groupadd --gid 10001 gateway" in recipe
    assert "USER 10001:10001" in recipe and "HEALTHCHECK" in recipe
    variables = set(re.findall(r"\b(GATEWAY_[A-Z_]+)=", recipe))
    assert variables <= {f"GATEWAY_{name.upper()}" for name in PROXY_FIELDS}, variables
