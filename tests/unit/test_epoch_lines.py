"""The epoch line a training child writes, read back by the parent for its progress."""

from rigbench.runner.epoch_lines import TAIL_BYTES, epoch_line, newest_epoch


def test_the_newest_epoch_line_is_read_back_from_the_end_of_the_file(tmp_path):
    path = tmp_path / "stderr.txt"
    assert newest_epoch(path) is None  # not written yet: no progress, no error
    path.write_text("W1127 some framework warning\n")
    assert newest_epoch(path) is None
    lines = [epoch_line(e, 2.0 / e) for e in range(1, 4)]
    path.write_text("\n".join(["noise"] + lines + ["a warning after it"]) + "\n")
    assert newest_epoch(path) == (3, "0.6667")
    # a long stderr (a traceback, thousands of warnings) is read from its end only
    path.write_text("x" * (10 * TAIL_BYTES) + "\n" + epoch_line(41, 0.0123) + "\n")
    assert newest_epoch(path) == (41, "0.0123")
