"""docs/conversations.md, its reasoning record part, as written: its Python runs, every
``reasoning_store`` value it shows opens, and the figures it states are the code's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from gateway_mw import record
from gateway_mw.record import open_record

from .support import ROOT

DOC = ROOT / "docs" / "conversations.md"
TEXT = DOC.read_text()
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(lang: str) -> list[str]:
    return [found.group(2) for found in FENCE.finditer(TEXT) if found.group(1) == lang]


@pytest.mark.parametrize("code", blocks("python"))
def test_python_block_runs(code: str) -> None:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "RecordCounts(written=2," in done.stdout


def test_every_value_shown_opens(tmp_path: Path) -> None:
    values = [v for block in blocks("toml") for v in re.findall(r'^reasoning_store = "([^"]*)"$', block, re.M)]
    assert len(values) >= 3
    for value in values:
        if value.startswith("sqlite:"):  # the documented path, moved under the test's own directory
            value = "sqlite:" + str(tmp_path / value.removeprefix("sqlite:/"))
        elif value.startswith("redis://"):
            pytest.importorskip("redis")
        opened = open_record(value)
        assert (opened is None) == (value == "off"), value


def test_the_figures_are_the_codes() -> None:
    from gateway_mw.record import redis as redis_backend

    stated = [
        f"{record.DEFAULT_TTL / 3600:g} hours by default",
        f"{record.DEFAULT_MAX_ENTRIES:,} entries",
        f"{record.DEFAULT_MAX_BYTES >> 20} MiB of entries",
        f"over {record.DEFAULT_MAX_ENTRY_BYTES >> 20} MiB is not stored",
        f"timeout ({record.DEFAULT_TIMEOUT:g} s)",
        f"write timeout ({record.DEFAULT_WRITE_TIMEOUT:g} s)",
        f"At most {record.DEFAULT_MAX_PENDING_WRITES} are in flight",
        f"after writing 1/{record.PRUNE_FRACTION} of a bound",
        f"at most {redis_backend.MAX_CONNECTIONS} connections",
        f"`{redis_backend.KEY_PREFIX.decode()}`",
        redis_backend.INSTALL_HINT,
    ]
    assert record.WARN_INTERVAL == 60 and "at most once a minute per backend" in " ".join(TEXT.split())
    flat = " ".join(TEXT.split())
    assert [phrase for phrase in stated if phrase not in flat] == []


def test_links_resolve() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", TEXT)
    assert targets
    for target in targets:
        assert (DOC.parent / target).exists(), target
