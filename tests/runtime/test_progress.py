"""Progress bars show only where someone watches (``dpjax._progress``)."""

from __future__ import annotations

from dpjax._progress import bar, progress, wanted


def test_bars_follow_the_environment_and_stay_quiet_in_tests(monkeypatch, capsys):
    monkeypatch.delenv("DPJAX_PROGRESS", raising=False)
    assert not wanted()                       # pytest captures stderr: not a terminal
    assert list(progress(range(3), "quiet")) == [0, 1, 2]
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("DPJAX_PROGRESS", "1")
    assert wanted() and not wanted(False)
    assert list(progress(range(3), "shown")) == [0, 1, 2]
    assert "shown" in capsys.readouterr().err
    monkeypatch.setenv("DPJAX_PROGRESS", "0")
    assert not wanted() and wanted(True)
    silent = bar(10, "never")
    silent.update(10)
    silent.close()
    assert capsys.readouterr().err == ""
