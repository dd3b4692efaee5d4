import os
import sys

from .run.forkserver import quiet_start

quiet_start()  # before the imports: rare full collections while the kit starts (forkserver.py)
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
sys.exit(code)
