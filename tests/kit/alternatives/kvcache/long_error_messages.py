"""Alternative: the verbose ValueError messages a careful student writes, the explanation first
and the shapes at the end, after more than 200 characters. The probe cut every message at 200
characters before the verdict looked for the shapes: cache-errors was lost (12 / 13)."""

from solutions.kvcache import *  # noqa: F403
from solutions.kvcache import KVCache as _Cache

WHY = (
    "KVCache.append: the keys and values of one call must agree in batch size, number of "
    "key/value heads and number of new tokens (dims 0, 1 and 2), and each call must match "
    "what the layer already holds in everything but the time axis (dim 2), because the cache "
    "stores the tokens of one layer side by side; "
)


class KVCache(_Cache):
    def append(self, layer, k, v):
        old = self.keys[layer]
        fits = k.dim() == 4 and v.dim() == 4 and k.shape[:3] == v.shape[:3]
        if fits and old is not None:
            fits = all(
                new.shape[:2] == held.shape[:2] and new.shape[3] == held.shape[3]
                for new, held in ((k, old), (v, self.values[layer]))
            )
        if not fits:
            held = "nothing" if old is None else f"k of size {tuple(old.shape)}"
            raise ValueError(
                WHY + f"the layer holds {held}; "
                f"got k of size {tuple(k.shape)} and v of size {tuple(v.shape)}"
            )
        return super().append(layer, k, v)
