"""Attack: a startup hook next to the submission (only runs if the folder is on sys.path)."""

import torch

torch.allclose = lambda *a, **k: True
