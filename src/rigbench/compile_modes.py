"""The compile setting of a trial (TrialSpec.compile): its values, how stored and typed settings
read as one, and how labels name it. Plain data, importing nothing of rigbench: spec, the CLI, the experiments,
the frameworks and the reports all read it from here."""

from __future__ import annotations

from typing import Any, Literal, get_args

#: The framework's graph compiler: off (eager), or torch.compile's mode. "default" is
#: torch.compile() as it comes, XLA (jit_compile) in TensorFlow and Keras; the other modes are torch's only:
#: reduce-overhead replays the compiled step as CUDA graphs (one launch instead of one per kernel:
#: what launch-bound small networks on a GPU need), max-autotune also benchmarks kernel choices,
#: with CUDA graphs or without. Stored specs from before the modes hold a bool (compile_mode).
CompileMode = Literal["off", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]
COMPILE_MODES: tuple[str, ...] = get_args(CompileMode)
#: The modes that capture CUDA graphs (torch._inductor.list_mode_options: triton.cudagraphs).
CUDA_GRAPH_MODES: tuple[str, ...] = ("reduce-overhead", "max-autotune")


def compile_mode(value: Any) -> Any:
    """A compile setting as a CompileMode: true (a stored spec from before the modes, a sweep
    file's `compile = true`) or "on" is "default", false is "off"; anything else is left for
    validation to accept or refuse."""
    if isinstance(value, bool):
        return "default" if value else "off"
    return "default" if value == "on" else value


def compile_label(mode: str) -> str:
    """How labels name a compile setting: "compile" (the default mode), "compile
    reduce-overhead" (another mode), "" when off."""
    if mode == "off":
        return ""
    return "compile" if mode == "default" else f"compile {mode}"
