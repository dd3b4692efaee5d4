import atexit
import locale
import os
import sys
import threading

# The kit reads and writes its files, and its processes their pipes, in UTF-8 (the
# feedback's √ and ≠, a student's comments in any language): on a machine whose locale says
# otherwise (PYTHONUTF8=0, a Latin-1 locale), start again in Python's UTF-8 mode, which every
# interpreter started from here inherits. A UTF-8 locale (nearly every machine) starts once.
if not sys.flags.utf8_mode and locale.getpreferredencoding(False).lower() not in ("utf-8", "utf8"):
    os.environ["PYTHONUTF8"] = "1"  # -X utf8: also under -E or -I, which ignore the variable
    os.execv(sys.executable, [sys.executable, "-X", "utf8", *sys.orig_argv[1:]])

from .run.forkserver import quiet_start  # noqa: E402

quiet_start()  # before the imports: rare full collections while the kit starts (forkserver.py)
from .feedback.unicode_math import ascii_terminal  # noqa: E402

ascii_terminal()  # a terminal that cannot show √ or ≠ gets ASCII, not a crash of the grading
from .core.settings import Settings, device_flag, hide_gpus_unless_cuda  # noqa: E402

hide_gpus_unless_cuda(device_flag(sys.argv[1:]))  # before anything touches CUDA
from .run import warm  # noqa: E402

# The warm grader decides before anything else is imported: --warm (make grade's WARM=) over
# the environment (Settings.resolve); cli.main resolves the rest of the settings itself.
settings = Settings.resolve(cli_args=warm.flags(sys.argv[1:]), environ=os.environ)
code = warm.client(sys.argv[1:], settings)  # `make grade`: the warm grader, when one is up
if code is None:
    from .channels.cli import main

    code = main()
    warm.start(sys.argv[1:], settings)  # warm for the next `make grade`
# End as sys.exit would, without the interpreter's teardown of every module it imported
# (torch's and the kit's: about 0.2 CPU-s per verb): the exit handlers run and the streams are
# flushed, then the process ends. Only when nothing else is left for sys.exit to wait for (a
# thread that is not a daemon) and the code is a number, as the warm grader's children end.
if (code is None or isinstance(code, int)) and all(
    t.daemon or t is threading.main_thread() for t in threading.enumerate()
):
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): nothing left to say
            pass
    os._exit(code or 0)
sys.exit(code)
