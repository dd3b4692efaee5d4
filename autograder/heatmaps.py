"""The heatmaps `make grade` saves: the student's plots beside the reference ones, as PNGs.

The attention comes from the trusted MiniGPT (fixed weights, a prompt from the corpus), so
both sides draw the same weights; the student's side uses the submission's plots.py, the
reference side autograder/trusted/plots.py (drawn once, then kept until the kit's code
changes). Nothing here may crash the grader: a plot that
fails is reported in one line and skipped. Figures are matplotlib Figure objects (no
pyplot), saved with the Agg canvas.
"""

from __future__ import annotations

from pathlib import Path

PROMPT = "The keeper wrote"


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
