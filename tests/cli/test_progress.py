"""cli/progress.py's byte bar for downloads: bytes, rate and time left on a terminal; nothing
when piped, before its delay, or with FATBIN_INSPECT_PROGRESS=0; a size the server did not give."""

from __future__ import annotations

import io
import re
import time

from fatbin_inspect.cli.progress import Transfer


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _drawn(stream: io.StringIO, total: int | None) -> str:
    with Transfer("torch-2.9.0 (index)", stream, delay=0) as bar:
        bar(1 << 20, total)
        time.sleep(0.15)  # two samples apart make a rate (and at most REFRESH draws a second)
        bar(3 << 20, total)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())


def test_a_terminal_sees_bytes_rate_and_time_left(monkeypatch):
    monkeypatch.delenv("FATBIN_INSPECT_PROGRESS", raising=False)
    text = _drawn(Tty(), 12 << 20)
    assert "torch-2.9.0 (index)" in text
    assert re.search(r"3\.\d/12\.\d MB", text), text  # bytes of the whole
    assert re.search(r"\d+\.\d MB/s", text) and re.search(r"\d:\d\d:\d\d", text), text  # rate, time left


def test_an_unknown_size_still_draws_the_bytes(monkeypatch):
    monkeypatch.delenv("FATBIN_INSPECT_PROGRESS", raising=False)
    assert re.search(r"3\.\d/\? MB", _drawn(Tty(), None))


def test_a_pipe_the_delay_and_the_switch_silence_it(monkeypatch):
    monkeypatch.delenv("FATBIN_INSPECT_PROGRESS", raising=False)
    assert _drawn(io.StringIO(), 12 << 20) == ""
    late = Tty()
    with Transfer("x", late, delay=3600) as bar:  # a download shorter than the delay draws nothing
        bar(1, 2)
    assert late.getvalue() == ""
    monkeypatch.setenv("FATBIN_INSPECT_PROGRESS", "0")
    assert _drawn(Tty(), 12 << 20) == ""
