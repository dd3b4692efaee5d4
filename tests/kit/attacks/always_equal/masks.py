"""Attack: masks that are plain objects equal to everything."""

# reported: wrong-return-type


class Anything:
    dtype = "torch.bool"
    shape = ()

    def __eq__(self, other):
        return True

    def __bool__(self):
        return True


def causal_mask(L, device=None):
    return Anything()


def padding_mask(lengths, S):
    return Anything()


def sliding_window_mask(L, window, device=None):
    return Anything()
