"""The heatmaps `make grade` saves: the student's plots beside the reference ones, as PNGs.

`make grade` calls `save_in_background`: the pictures are drawn (about 4 CPU-s) in a detached
process after the table prints, only when plots.py or the kit changed since they were last
drawn, and land in the folder whole (written aside, then renamed).

The attention comes from the trusted MiniGPT (fixed weights, a prompt from the corpus), so
both sides draw the same weights; the student's side uses the submission's plots.py, the
reference side autograder/trusted/plots.py (drawn once, then kept until the kit's code
changes). Nothing here may crash the grader: a plot that
fails is reported in one line and skipped. Figures are matplotlib Figure objects (no
pyplot), saved with the Agg canvas.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

PROMPT = "The keeper wrote"
STAMP = ".drawn"  # what the pictures in the folder were drawn from


def _attention():
    import torch

    from .trusted import gpt

    _, vocab, _ = gpt.load_corpus()
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = gpt.MiniGPT(len(vocab), d_model=32, num_heads=4, num_layers=2, d_ff=64).eval()
        torch.nn.init.normal_(model.token_embed.weight, std=0.5)
    with torch.no_grad():
        _, attn = model(vocab.encode(PROMPT)[None], return_attn=True)
    return attn, [c if c != " " else "␣" for c in PROMPT]


def save(submission, out_dir: Path) -> list[str]:
    """Render and save; returns the lines to print (paths saved, or why one was skipped)."""
    import matplotlib

    matplotlib.use("Agg")
    from .trusted import plots as reference

    try:
        attn, tokens = _attention()
        student = submission.load("plots")
    except Exception as e:  # the student's plots.py does not import, or the kit is broken
        return [f"  (no heatmaps: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"]
    figures = {
        "attention": lambda m: m.plot_attention(attn[-1][0, 0], tokens, title="last layer, head 0"),
        "layer_means": lambda m: m.plot_layer_means(attn, tokens),
        "heads": lambda m: m.plot_heads(attn[-1][0], tokens),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    # The reference figures change only with the kit's code: drawn once, then kept.
    kit = max(Path(reference.__file__).stat().st_mtime, Path(__file__).stat().st_mtime)
    for name, draw in figures.items():
        for who, module in (("yours", student), ("reference", reference)):
            path = out_dir / f"{name}_{who}.png"
            if who == "reference" and path.is_file() and path.stat().st_mtime > kit:
                lines.append(f"  {path}")
                continue
            try:
                draw(module).savefig(path, dpi=80)
                lines.append(f"  {path}")
            except NotImplementedError:
                lines.append(f"  {path.name}: not attempted yet")
            except Exception as e:  # a broken plot costs its picture, never the grading
                lines.append(f"  {path.name}: not drawn ({type(e).__name__}: {e})"[:200])
    return lines


def _stamp(submission) -> str:
    """plots.py's bytes and the kit's drawing code: the pictures change with nothing else."""
    from .trusted import gpt, plots

    digest = hashlib.sha256()
    for path in (submission.path / "plots.py", Path(plots.__file__), Path(gpt.__file__)):
        digest.update(path.read_bytes() if path.is_file() else b"-")
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()


def save_in_background(submission, out_dir: Path) -> str:
    """The line `make grade` prints: the pictures are up to date, or being drawn in a
    detached process (never the grading process: it runs the student's plots.py)."""
    out_dir = Path(out_dir)
    stamp = _stamp(submission)
    try:
        if (out_dir / STAMP).read_text() == stamp:
            return f"Heatmaps (yours beside the reference), unchanged since plots.py: {out_dir}/"
    except OSError:
        pass
    if os.fork() == 0:  # the drawer's parent: it only forks the drawer, so nobody waits for it
        try:
            os.setsid()
            if os.fork() == 0:
                _draw(submission, out_dir, stamp)
        finally:
            os._exit(0)
    os.wait()
    return (
        f"Heatmaps (yours beside the reference): drawing into {out_dir}/ in the background "
        f"(a few seconds; {out_dir}/heatmaps.txt says what was drawn)"
    )


def _draw(submission, out_dir: Path, stamp: str) -> None:
    """The detached drawer: draws aside, then moves each picture into place."""
    try:
        import torch

        torch.set_num_threads(1)  # forked from a process that may have used OpenMP threads
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        aside = out_dir / f".drawing-{os.getpid()}"
        aside.mkdir(parents=True)
        for path in out_dir.glob("*_reference.png"):  # kept while the kit is unchanged
            shutil.copy2(path, aside / path.name)
        lines = save(submission, aside)
        for path in aside.glob("*.png"):
            path.replace(out_dir / path.name)
        text = "\n".join(line.replace(str(aside), str(out_dir)) for line in lines)
        (out_dir / "heatmaps.txt").write_text(text + "\n")
        (out_dir / STAMP).write_text(stamp)
        for path in aside.iterdir():
            path.unlink()
        aside.rmdir()
    finally:
        os._exit(0)
