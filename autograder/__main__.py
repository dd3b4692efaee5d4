import sys

from . import warm

code = warm.client(sys.argv[1:])  # `make grade`: the warm grader, when one is up for this kit
if code is None:
    from .cli import main

    code = main()
    warm.start(sys.argv[1:])  # warm for the next `make grade`
sys.exit(code)
