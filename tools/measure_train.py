"""Measure a training check on a submission: held-out loss and CPU seconds per seed.

    PYTHONPATH=. python tools/measure_train.py [--submission solutions] [--seeds 20] [--first 0]
        [--check gpt.train | llama.train | induction.train]

Single-threaded (torch.set_num_threads(1)), as on a loaded grading machine. The figures
behind each judge's TRAIN_SOLUTION_LOSS and TRAIN_THRESHOLD (docs/gpt.md, docs/llama.md) come
from this script; for induction.train it prints the trained model's best previous-token and
induction scores and its in-context loss drop (docs/induction.md).
"""

from __future__ import annotations

import argparse
import time

import torch

from autograder.checks.gpt import judge, judge_models, probe
from autograder.checks.induction import judge as induction_judge
from autograder.checks.llama import judge_models as llama_models
from autograder.core import registry
from autograder.run.engine import judge as judge_result
from autograder.run.probing import attempt, make_inputs
from autograder.run.submission import Submission


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submission", default="solutions")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first", type=int, default=0, help="the first seed (then the next ones)")
    parser.add_argument(
        "--check", default="gpt.train", choices=("gpt.train", "llama.train", "induction.train")
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    check = registry.find(args.check)
    submission = Submission(args.submission)
    losses, cpus = [], []
    for seed in range(args.first, args.first + args.seeds):
        start = time.process_time()
        inputs = make_inputs(check, seed)
        got = attempt(check, submission, inputs)
        result = got if not isinstance(got, dict) else judge_result(check, got, None, inputs)
        cpu = time.process_time() - start
        loss = float("nan")
        if isinstance(got, dict) and "losses" in got and args.check == "induction.train":
            prev, ind, loss = induction_judge.trained_measures(got, inputs)
            print(f"seed {seed:2d}: previous {prev:.2f}  induction {ind:.2f}  drop {loss:.2f}")
        elif isinstance(got, dict) and "losses" in got and args.check == "llama.train":
            loss = llama_models.held_out_loss(got, inputs)
        elif isinstance(got, dict) and "losses" in got:
            alphabet, data = probe.corpus()
            T = probe.TRAIN_ARGS["seq_len"]
            loss, _ = judge_models.eval_losses(
                judge._trained(got, alphabet), data, inputs["eval_starts"], T
            )
        losses.append(loss)
        cpus.append(cpu)
        print(f"seed {seed:2d}: loss {loss:.3f}  {cpu:.2f} CPU-s  {result.status}")
    print(
        f"loss {min(losses):.3f} .. {max(losses):.3f}; CPU-s per check "
        f"{min(cpus):.2f} .. {max(cpus):.2f} (the first includes warm-up)"
    )


if __name__ == "__main__":
    main()
