"""The embedded judge's native side: which llama.cpp buffer types load the model, and the facts a crash report needs.

llama.cpp's CPU backend may load weights into *extra buffer types* that repack them for a faster kernel; on an x86
CPU that reports AMX (``amx_tile``) the AMX buffer type takes every quantised matrix. Where the CPU reports AMX but
the machine does not let a process use its tiles (seen in virtual machines: issue 23), the first matrix product dies
with SIGILL (``tileloadd``) or SIGSEGV (``ldtilecfg``) inside ``ggml_backend_amx_mul_mat``, and no Python code runs
to say why. So the judge loads the model with extra buffer types off unless asked (``extra_buffers``), and, when the
``assay`` launcher asks for it (:data:`BREADCRUMB_ENV`), leaves a breadcrumb saying that llama.cpp is loaded and how,
which the launcher reads if the process dies by a signal.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay_launcher import BREADCRUMB_ENV  # set by the `assay` launcher: the file the judge describes itself in

#: CPU flags (``/proc/cpuinfo``) of the AMX units llama.cpp's AMX buffer type uses.
AMX_FLAGS = ("amx_tile", "amx_int8", "amx_bf16")
#: Tests only: a signal name (``SIGILL``, ``SIGSEGV``...) the embedded judge raises in its worker thread at its
#: first evaluation, to prove that a native crash reaches the user as a message.
CRASH_TEST_ENV = "ASSAY_TEST_NATIVE_CRASH"

_PATCH_LOCK = threading.Lock()


def cpu_flags(cpuinfo: str) -> list[str]:
    """The AMX flags in a ``/proc/cpuinfo`` text (its first ``flags`` line: every core reports the same)."""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            present = set(line.partition(":")[2].split())
            return [f for f in AMX_FLAGS if f in present]
    return []


def read_amx_flags() -> list[str]:
    """This machine's AMX flags; empty where ``/proc/cpuinfo`` is absent (not Linux) or has none."""
    try:
        return cpu_flags(Path("/proc/cpuinfo").read_text(errors="replace"))
    except OSError:
        return []


def supports_extra_buffers(llama_cpp: Any) -> bool:
    """Whether this llama-cpp-python's model params have llama.cpp's ``use_extra_bufts`` field."""
    return any(name == "use_extra_bufts" for name, *_ in llama_cpp.llama_model_params._fields_)


@contextlib.contextmanager
def model_params(llama_cpp: Any, extra_buffers: bool) -> Iterator[None]:
    """While a ``llama_cpp.Llama`` is built inside this block, its model params carry ``use_extra_bufts``.

    ``Llama`` takes no argument for the field; it builds its params from ``llama_model_default_params()`` and
    hands them to the model loader, so the default is wrapped for the duration of the block (under a lock: one
    load at a time in this process). The params object the model got stays readable as ``llm.model_params``.
    """
    module = llama_cpp.llama_cpp
    with _PATCH_LOCK:
        default = module.llama_model_default_params

        def with_setting() -> Any:
            params = default()
            params.use_extra_bufts = extra_buffers
            return params

        module.llama_model_default_params = with_setting
        try:
            yield
        finally:
            module.llama_model_default_params = default


def system_info(llama_cpp: Any) -> str:
    """llama.cpp's own line about its build and this CPU (``CPU : SSE3 = 1 | AVX2 = 1 | AMX_INT8 = 1 | ...``)."""
    try:
        return llama_cpp.llama_print_system_info().decode("utf-8", errors="replace").strip()
    except (AttributeError, OSError):  # pragma: no cover - every llama-cpp-python we support has it
        return "unknown"


def write_breadcrumb(facts: dict[str, Any], environ: dict[str, str] | os._Environ[str] = os.environ) -> Path | None:
    """Describe the loaded native code in the file the launcher named (nothing when no launcher asked).

    Written before the model loads (``stage: loading``) and again once it is loaded, so that a crash while
    loading is reported too. The process id lets the launcher tell its own child's breadcrumb from a Ray
    worker's (which inherits the variable).
    """
    target = environ.get(BREADCRUMB_ENV)
    if not target:
        return None
    path = Path(target)
    try:
        path.write_text(json.dumps({"pid": os.getpid(), **facts}), encoding="utf-8")
    except OSError:  # the report is a courtesy: never fail a run over it
        return None
    return path


def enable_faulthandler() -> str:
    """Print the Python stack of every thread if native code kills the process (for API users and notebooks;
    the ``assay`` command's child runs under ``-X faulthandler`` already). Says what was done, for ``runtime()``.

    The stack goes to the process's real standard error (a notebook's kernel log), since a notebook's
    ``sys.stderr`` has no file descriptor for the C handler to write to.
    """
    if faulthandler.is_enabled():
        return "on (already)"
    stream = sys.__stderr__
    try:
        if stream is None:
            return "off (no standard error)"
        faulthandler.enable(file=stream, all_threads=True)
    except (ValueError, OSError, AttributeError) as exc:  # a stream without a file descriptor
        return f"off ({exc})"
    return "on (enabled by the embedded judge)"
