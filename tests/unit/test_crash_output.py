"""A crashed child's stderr read back for its error (runner/launchers/crash_output.py): the end
of the file, and with a faulthandler dump, the dump without its noise after what came before it."""

from rigbench.runner.launchers.crash_output import BEFORE_SHARE, fitted_tail, stderr_tail
from rigbench.runner.launchers.steps import describe_exit
from tests.conftest import quick_spec

NATIVE = "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n"
FRAME = '  File "/site-packages/torch/_tensor.py", line 623 in backward\n'
DUMP = (
    "Fatal Python error: Aborted\n\n"
    "Thread 0x00007f28f6d386c0 (most recent call first):\n"
    '  File "/src/rigbench/runner/child.py", line 325 in watch\n'
    '  File "/usr/lib/python3.11/threading.py", line 982 in run\n'
    '  File "/usr/lib/python3.11/threading.py", line 1045 in _bootstrap_inner\n\n'
    "Current thread 0x00007f291a26db80 (most recent call first):\n"
    '  File "/src/rigbench/runner/protocol.py", line 136 in measure\n'
    '  File "<frozen runpy>", line 88 in _run_code\n\n'
    "Extension modules: " + ", ".join(f"numpy._core.module{i}" for i in range(300)) + " (total: 300)\n"
)

#: JAX's coordination client aborting on node 1 when node 0 went away (Ctrl-C there), as its rank
#: wrote it on this VM: the check's message, absl's native stack trace, then faulthandler's dump.
JAX_ABORT = (
    "F1128 15:41:02.553 coordination_service_agent.cc:339] Terminating process because the JAX distributed "
    "service detected fatal errors. This most likely indicates that another task died; see the other task "
    "logs for more details. absl::Status: UNAVAILABLE: Failed to send RPC to coordination service. Either the "
    "leader task was preempted/died/restarted unexpectedly or this task is experiencing network issues.\n"
    ":UNKNOWN:Error received from peer  {grpc_status:14, grpc_message:\"Socket closed\"}\n"
    "*** Check failure stack trace: ***\n"
    + "    @     0x7fd9b9440634  absl::lts_20260107::log_internal::LogMessage::SendToLog()\n" * 11
    + "    @     0x7fd9d7aa71f5  (unknown)\n"
)
TORCH_FRAMES = ("  frame #4: <unknown function> + 0x674987b (0x7f77fdb4987b in libtorch_cpu.so)\n" * 20
                + "  <omitting python frames>\n")


def test_the_end_of_a_long_file(tmp_path):
    path = tmp_path / "err.txt"
    path.write_text("x" * 50_000 + "é" * 10 + "the end", encoding="utf-8")
    assert stderr_tail(path, chars=17) == "é" * 10 + "the end"
    assert stderr_tail(tmp_path / "missing.txt") == ""


def test_a_dump_keeps_the_native_message_and_the_stacks_without_the_module_list(tmp_path):
    path = tmp_path / "err.txt"
    path.write_text("warning\n" * 5_000 + NATIVE + DUMP, encoding="utf-8")
    tail = stderr_tail(path)
    assert "warning\nwarning\n" in tail and NATIVE + "Fatal Python error: Aborted\n" in tail
    assert "Extension modules" not in tail and "numpy._core" not in tail
    assert "threading.py" not in tail and "frozen runpy" not in tail  # start-up code: noise
    assert tail.endswith('  File "/src/rigbench/runner/protocol.py", line 136 in measure\n\n')
    assert "in watch\n" in tail and len(tail) <= 2000


def test_a_long_dump_leaves_a_share_to_what_came_before_it_and_keeps_its_top():
    before = "x" * 5_000 + NATIVE
    dump = DUMP.replace("line 136 in measure\n", "line 136 in measure\n" + FRAME * 100)
    tail = fitted_tail(before + dump, chars=1000)
    assert len(tail) == 1000
    assert tail.startswith("x") and tail.index("Fatal Python error") == int(1000 * BEFORE_SHARE)
    assert NATIVE in tail and "in measure\n" + FRAME in tail  # the crashing thread's newest frames


def test_the_last_of_two_dumps_is_the_one_kept():
    tail = fitted_tail("Fatal Python error: Segmentation fault\nfirst\n" + NATIVE + DUMP)
    assert tail.startswith("Fatal Python error: Segmentation fault\nfirst\n" + NATIVE + "Fatal Python error: Aborted")


def test_out_of_memory_under_a_cap_is_still_told_apart_behind_a_dump(tmp_path):
    """describe_exit reads the native runtime's words, which come before the dump."""
    path = tmp_path / "err.txt"
    path.write_text(NATIVE + DUMP.replace("in measure\n", "in measure\n" + FRAME * 100), encoding="utf-8")
    capped = quick_spec(memory_limit_bytes=700 * 2**20)
    report = describe_exit(-6, stderr_tail(path), capped)
    assert report.status == "oom" and "std::bad_alloc" in report.error
    assert describe_exit(-6, stderr_tail(path), quick_spec()).status == "crash"


def test_a_bare_memory_error_says_what_ran_out():
    """JAX under a 300 MiB cap raised a MemoryError with no text: the stored error was just
    'MemoryError', where every other framework's named the cap."""
    from rigbench.child_report import ChildReport
    from rigbench.runner.failure_status import classify

    report = ChildReport(status="ok")
    classify(MemoryError(), report, None, 300 * 2**20)
    assert report.status == "oom"
    assert report.error == ("MemoryError: an allocation failed under the --memory-limit cap (300 MiB, an "
                            "address-space cap: the framework's runtime and threads count against it too)")
    uncapped = ChildReport(status="ok")
    classify(MemoryError(), uncapped, None)
    assert uncapped.error == "MemoryError: an allocation failed"
    told = ChildReport(status="ok")
    classify(MemoryError("CPU out of memory"), told, None, 300 * 2**20)
    assert told.error == "CPU out of memory"  # the framework's own words stand


def test_the_childs_phase_lines_are_not_part_of_its_error(tmp_path):
    """The phase lines a child writes for the progress bar (runner/epoch_lines.py) stay out of a
    crash's stored error: what the child and its libraries said keeps the room."""
    from rigbench.runner.epoch_lines import phase_line

    path = tmp_path / "err.txt"
    path.write_text(phase_line("starting torch") + "\n" + NATIVE + phase_line("warm-up (the first step took 1 s)") + "\n"
                    + DUMP, encoding="utf-8")
    tail = stderr_tail(path)
    assert tail.startswith(NATIVE + "Fatal Python error: Aborted") and "rigbench: phase:" not in tail


def test_native_stack_frames_leave_room_for_the_message_before_them():
    dump = DUMP.replace("line 136 in measure\n", "line 136 in measure\n" + FRAME * 100)
    tail = fitted_tail("warning\n" * 500 + JAX_ABORT + dump)
    assert "Terminating process because the JAX distributed service detected fatal errors" in tail
    assert "0x7fd9" not in tail and "Check failure stack trace" not in tail
    assert 'grpc_message:"Socket closed"}\nFatal Python error: Aborted\n' in tail
    torch = fitted_tail("torch.distributed.DistStoreError: wait timeout after 60000ms\n" + TORCH_FRAMES, chars=200)
    assert torch == "torch.distributed.DistStoreError: wait timeout after 60000ms\n"
