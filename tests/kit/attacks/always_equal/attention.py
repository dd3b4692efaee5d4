"""Attack: return objects that claim to equal anything (a Tensor subclass whose __eq__,
allclose and equal always say yes)."""

# reported: wrong-return-type
import torch


class AlwaysEqual(torch.Tensor):
    def __eq__(self, other):
        return True

    __ne__ = lambda self, other: False  # noqa: E731

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal, torch.Tensor.equal):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


def scaled_dot_product_attention(q, k, v, mask=None):
    out = torch.zeros(*q.shape[:-1], v.shape[-1]).as_subclass(AlwaysEqual)
    return out, torch.zeros(*q.shape[:-1], k.shape[-2]).as_subclass(AlwaysEqual)


def attention_with_bias(q, k, v, bias, mask=None):
    return scaled_dot_product_attention(q, k, v, mask)
