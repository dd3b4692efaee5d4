"""Run untrusted student code in a confined process; judge its results here.

    wire.py    the channel from the sandboxed process: plain tensors and values, no pickle
    jail.py    hidden paths (mount namespaces), resource limits, an unprivileged uid
    zygote.py  a fork server: torch imported once, one fork per submission, a wall clock
    child.py   the sandboxed process: inputs first, then the student's modules and probes
    runner.py  Sandbox: one submission in, Results out (verdicts run in the trusted parent)

Import from the modules (`from autograder.run.sandbox.runner import Sandbox`): this package
imports nothing itself, so that the CLI starts without importing torch.
"""
