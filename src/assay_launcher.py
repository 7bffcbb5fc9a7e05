"""The ``assay`` command: runs the CLI in a child process and says what happened if native code kills it.

A crash in native code (llama.cpp's kernels, an extension module) kills the process with a signal before any
Python code can speak; a shell then shows ``Illegal instruction`` or nothing and an exit status of 132 or 139.
The launcher runs ``assay.cli.main`` in a child (the same interpreter and arguments, standard streams passed
through, Python's ``faulthandler`` on), waits for it, and, if the child died by SIGILL, SIGSEGV, SIGBUS, SIGABRT
or SIGFPE, prints one message naming the signal, what it usually means and what to do, naming the embedded judge
and its fix where the child left a breadcrumb saying llama.cpp was loaded (:mod:`assay.judges.native`). It exits
128 + the signal, as a shell would.

Ctrl-C: the terminal sends SIGINT to the whole foreground process group, child included; the child stops its run
and exits 130, and the launcher ignores the signal and waits for it. SIGTERM and SIGHUP sent to the launcher are
passed on to the child. A program that interrupts ``assay`` should signal its process group, as a terminal does.

This module lives outside the ``assay`` package on purpose: importing anything under ``assay`` runs
``assay/__init__``, which loads the API (about 0.25 s); it imports only the standard library's os, sys,
subprocess and signal (and json and tempfile, which are cheap).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile

#: Where the child's embedded judge describes itself (:func:`assay.judges.native.write_breadcrumb`).
BREADCRUMB_ENV = "ASSAY_NATIVE_BREADCRUMB"
#: The child: the in-process CLI, named ``assay`` in its usage lines (``python -m`` would name it that way).
CHILD_CODE = "import sys; sys.argv[0] = 'assay'; from assay.cli.main import main_process; main_process()"
#: Signals that mean native code crashed, with what each usually means.
CRASH_SIGNALS = {
    "SIGILL": "the CPU refused an instruction: native code built for another CPU, or using a unit (such as AMX) "
              "that this machine does not let a process use",
    "SIGSEGV": "native code read or wrote memory it may not (a crash inside a C/C++ library)",
    "SIGBUS": "native code read memory that is not there (often a model file changed or cut while mapped)",
    "SIGABRT": "a C/C++ library stopped the process after an internal check failed",
    "SIGFPE": "native code did an invalid arithmetic operation",
}
BUILD_FIX = ('rebuild llama-cpp-python for a generic CPU: CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install '
             "--force-reinstall --no-deps --no-cache-dir llama-cpp-python")


def child_command(args: list[str]) -> list[str]:
    """The child's command line: this interpreter, faulthandler on, the CLI with the user's arguments."""
    return [sys.executable, "-X", "faulthandler", "-c", CHILD_CODE, *args]


def read_breadcrumb(path: str, pid: int) -> dict | None:
    """The embedded judge's breadcrumb in ``path`` if the child process ``pid`` wrote it (a Ray worker's, which
    inherits the variable, is not the child's)."""
    try:
        with open(path, encoding="utf-8") as fh:
            facts = json.load(fh)
    except (OSError, ValueError):
        return None
    return facts if isinstance(facts, dict) and facts.get("pid") == pid else None


def crash_message(signum: int, facts: dict | None) -> str:
    """What to tell the user when the child died by ``signum``: the signal, its usual meaning, what to do."""
    name = signal.Signals(signum).name
    lines = [f"assay: the process was killed by {name} (exit {128 + signum}): {CRASH_SIGNALS[name]}."]
    if facts is not None:
        lines += _judge_lines(name, facts)
    else:
        lines.append("  Python's stack at the crash is printed above (faulthandler). If it shows llama_cpp, see the "
                     "embedded judge's CPU options in docs/judges.md; otherwise please report it with that stack.")
    lines.append("  A run's finished judgments are stored: re-run the same command to resume it.")
    return "\n".join(lines)


def _judge_lines(name: str, facts: dict) -> list[str]:
    """The lines naming the embedded judge, what it ran with, and its fixes."""
    stage = "while loading" if facts.get("stage") == "loading" else "with"
    amx = facts.get("cpu_amx") or []
    extra = facts.get("extra_buffers")
    shown = str(extra).lower() if isinstance(extra, bool) else extra
    lines = [f"  It happened {stage} the embedded judge (llama.cpp through llama-cpp-python "
             f"{facts.get('llama_cpp_python', '?')}, model {facts.get('model', '?')}, extra_buffers={shown}).",
             f"  This CPU reports AMX ({', '.join(amx)})." if amx else "  This CPU reports no AMX.",
             f"  llama.cpp build: {facts.get('system_info', 'unknown')}"]
    if extra is True and amx:
        lines.append("  What to do: leave extra_buffers at its default (false): drop --judge-opt extra_buffers=true "
                     "(llama.cpp's AMX kernels crash where the machine does not let a process use AMX).")
    lines.append(f"  {'What to do' if not (extra is True and amx) else 'If it still crashes'}: {BUILD_FIX}; or judge "
                 "with a llama.cpp server instead (--judge openai:MODEL@http://127.0.0.1:8080/v1).")
    if name == "SIGBUS":
        lines.append("  A SIGBUS also happens when the model file is changed or truncated during the run.")
    return lines


def _relay(proc_holder: list[subprocess.Popen], pending: list[int]) -> None:
    """Pass SIGTERM and SIGHUP on to the child (held until it exists); ignore Ctrl-C, which the child gets too."""
    def forward(signum: int, frame: object) -> None:
        if proc_holder:
            proc_holder[0].send_signal(signum)
        else:
            pending.append(signum)

    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # ignored (a background job): stays so, child too
        signal.signal(signal.SIGINT, lambda signum, frame: None)  # a handler, not SIG_IGN: the child gets default
    for name in ("SIGQUIT",):
        if hasattr(signal, name) and signal.getsignal(getattr(signal, name)) is not signal.SIG_IGN:
            signal.signal(getattr(signal, name), lambda signum, frame: None)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), forward)


def main() -> int:
    """Run the CLI in a child process; return its exit code, or 128 + the signal that killed it (with a message
    on standard error when that signal means a native crash)."""
    breadcrumb = os.environ.get(BREADCRUMB_ENV, "")  # an outer tool's (or a test's) file: used and kept
    ours = not breadcrumb
    if ours:
        fd, breadcrumb = tempfile.mkstemp(prefix="assay-native-", suffix=".json")
        os.close(fd)
    env = dict(os.environ, **{BREADCRUMB_ENV: breadcrumb})
    holder: list[subprocess.Popen] = []
    pending: list[int] = []
    _relay(holder, pending)
    try:
        holder.append(subprocess.Popen(child_command(sys.argv[1:]), env=env))
        for signum in pending:
            holder[0].send_signal(signum)
        code = holder[0].wait()
        if code >= 0:
            return code
        signum = -code
        if signum in {getattr(signal, name) for name in CRASH_SIGNALS if hasattr(signal, name)}:
            sys.stderr.write(crash_message(signum, read_breadcrumb(breadcrumb, holder[0].pid)) + "\n")
            sys.stderr.flush()
        return 128 + signum
    finally:
        if ours and os.path.exists(breadcrumb):
            os.unlink(breadcrumb)


if __name__ == "__main__":
    sys.exit(main())
