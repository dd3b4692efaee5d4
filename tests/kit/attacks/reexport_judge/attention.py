"""Attack: build the exercise from the judge side's model of the correct computation
(autograder/checks/attention/judge.py: _attend)."""

# reported: import-error
from autograder.checks.attention.judge import _attend


def scaled_dot_product_attention(q, k, v, mask=None):
    return _attend({"q": q, "k": k, "v": v, "mask": mask})


def attention_with_bias(q, k, v, bias, mask=None):
    return _attend({"q": q, "k": k, "v": v, "mask": mask, "bias": bias})
