"""What a command says on stderr while it works: a line before seconds of work nothing else
shows. Found by timing each command's stderr lines: `recommend mlp` said nothing for its first
6.5 s (torch asked for its devices), `run mlp --quick` without -d drew nothing for 5.8 s."""

from rigbench.cli import show_progress_lines
from rigbench.cli.common import err
from rigbench.runner import probe


def test_asking_a_framework_for_its_devices_is_said_first_on_a_terminal(monkeypatch, capsys):
    """`rigbench run` without -d (and calibrate, recommend) asked torch for its devices in a child
    process, seconds before anything was drawn on the terminal, bar or line. Into a pipe it says
    nothing: a device torch lacks is then a one-line error alone."""
    monkeypatch.setattr(probe, "probe_group", lambda names: {"torch": {"devices": [{"id": "cpu"}]}})
    show_progress_lines()
    for terminal, said in ((True, "asking torch which devices it can use (it starts in a child process: seconds)\n"),
                           (False, "")):
        monkeypatch.setattr(probe, "_answers", {})
        monkeypatch.setattr(err, "_force_terminal", terminal)
        assert probe.probe("torch") == {"devices": [{"id": "cpu"}]}
        assert capsys.readouterr().err == said
