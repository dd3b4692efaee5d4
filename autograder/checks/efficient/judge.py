"""Judge side of efficient.py's checks: misconceptions, models of right and wrong
computations (float64, here only: never in the process that runs student code), verdicts.

Checks titled "matches the reference" compare values; the others test the property they
name on the student's own runs (chunk-size invariance, shift invariance, the feature map
measured from the outputs, memory and cost), each with a small run that computes nothing
cannot pass, so a mistake elsewhere is charged where it is named, once.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...core import NOT_FINITE, WRONG_DTYPE, CheckList, Failure, Misconceptions, no_reference
from ...tolerances import tolerance
from ...verdicts import ModelUnavailable, assert_close, close, model, tensor
from ..masks.judge import window_with_mistake
from . import probe

misconception = Misconceptions(__name__)  # this module's (core.Misconceptions)

CHECKS = CheckList("efficient")

# --------------------------------------------------------------------------- misconceptions

LOCAL_OFF_BY_ONE = misconception(
    "local-window-off-by-one",
    "With window={window}, your local attention lets each query see {seen} keys; it should see "
    "exactly {window}: itself and the {before} before it.",
    (
        "A window of size w means that each query sees exactly w keys: itself and the w - 1 "
        "just before it. An off-by-one boundary changes how many keys every query sees.",
        "Build the mask with sliding_window_mask from the masks exercise and pass it to "
        "scaled_dot_product_attention; if you write the test yourself, block key j once the "
        "distance i - j reaches the window.",
        "Key j is too far back when i - j >= window (not i - j > window): "
        "sliding_window_mask(T, window) already encodes this.",
    ),
)
LOCAL_NOT_CAUSAL = misconception(
    "local-not-causal",
    "Your local attention lets queries see keys in the future (j > i): the window must reach "
    "backwards only.",
    (
        "Local attention here is a causal sliding window: a query sees only keys behind it, "
        "never future ones, like the causal mask it extends.",
        "sliding_window_mask blocks both the future (j > i) and the keys too far back: use it "
        "rather than a band around the query.",
        "Use sliding_window_mask(T, window), which blocks j > i as well as i - j >= window; a "
        "band |i - j| < window centred on the query is not causal.",
    ),
)
STRIDED_NO_BAND = misconception(
    "strided-drops-local-band",
    "Your strided attention keeps only every stride-th key (i - j a multiple of {stride}) and "
    "drops the local band: query i no longer sees its {before} nearest predecessors.",
    (
        "The strided pattern (Sparse Transformer) has two parts: a local band of the nearest "
        "keys, and every stride-th key further back. Together they let two hops reach every "
        "earlier key; the columns alone miss the neighbours.",
        "Combine two conditions on the distance i - j with | (or): the band (distance below the "
        "stride) and the columns (distance a multiple of the stride); then require with & that "
        "the key is not in the future.",
        "Keep key j when i - j >= 0 and (i - j < stride or (i - j) % stride == 0): the band and "
        "the strided columns together, so that two hops reach every earlier key.",
    ),
)
STRIDED_NO_COLUMNS = misconception(
    "strided-drops-columns",
    "Your strided attention keeps only the local band (i - j < {stride}): the keys a multiple "
    "of the stride further back are missing, so this is plain local attention.",
    (
        "Beyond the local band, the strided pattern keeps every stride-th key further back: "
        "these columns let information cross the whole sequence in two steps.",
        "Add a second condition with | (or): the distance i - j is a multiple of the stride "
        "(the % operator).",
        "Add the strided keys: | ((i - j) % stride == 0), still causal.",
    ),
)
STRIDED_NOT_CAUSAL = misconception(
    "strided-not-causal",
    "Your strided attention lets queries see keys in the future (j > i).",
    (
        "Like every pattern in this module, strided attention is causal: a query never sees "
        "the keys after it. The band and column tests alone do not ensure that.",
        "Require i - j >= 0 with & around the whole pattern: a negative distance passes both "
        "the band test and the modulo test.",
        "Combine the pattern with (i - j >= 0): in Python, a negative i - j is < stride and "
        "(-stride) % stride == 0, so both tests let the future through on their own.",
    ),
)
STRIDE_OFF_BY_ONE = misconception(
    "stride-off-by-one",
    "With stride={stride}, your local band is off by one: query i should see itself and the "
    "{before} keys before it (i - j < stride), then every stride-th key further back.",
    (
        "With stride s the band holds s keys (the query itself and the s - 1 before it), and "
        "the columns go on every s keys further back: both parts use the same s.",
        "The band is a strict comparison of i - j with the stride itself, the columns a test of "
        "(i - j) modulo the stride. Try stride = 1 by hand: the band is then the diagonal alone.",
        "The band is i - j < stride (not < stride - 1), the columns (i - j) % stride == 0.",
    ),
)
STRIDED_ABSOLUTE = misconception(
    "strided-absolute-positions",
    "Your strided columns are fixed positions (j % stride == 0), the same for every query; "
    "in the strided pattern they count back from each query: (i - j) % stride == 0.",
    (
        "The strided columns are counted back from each query, so that every query sees keys at "
        "the same distances; fixed key positions give each query another pattern.",
        "Test the distance i - j modulo the stride, with i from a (T, 1) arange and j from a "
        "(1, T) arange.",
        "Use the distance i - j, not the key position j alone.",
    ),
)
STRIDE_NOT_VALIDATED = misconception(
    "strided-stride-not-validated",
    "strided_attention(..., stride=0) {got}; the docstring promises ValueError for stride < 1.",
    (
        "A stride below 1 means nothing: the docstring promises a clear ValueError, not an "
        "obscure ZeroDivisionError or an empty band.",
        "Test stride before any computation and raise ValueError with a message that gives "
        "its value.",
        "Keep the first lines: if stride < 1: raise ValueError(...), before any computation "
        "(x % 0 raises ZeroDivisionError, and a band i - j < 0 is empty).",
    ),
)
LINEAR_NO_NORMALISER = misconception(
    "linear-no-normaliser",
    "Your linear attention returns the numerator phi(q_i)ᵀ Σ_j phi(k_j) v_jᵀ without dividing by "
    "the normaliser phi(q_i)ᵀ Σ_j phi(k_j): the weights no longer sum to 1.",
    (
        "Softmax attention divides by a sum so that each query's weights sum to 1; linear "
        "attention needs the same: its weights phi(q_i)·phi(k_j) are divided by their sum "
        "over the keys.",
        "Compute one normaliser per query, phi(q_i) times the sum of phi(k_j) over j, a "
        "(..., T, 1) tensor, and divide the numerator by it plus eps.",
        "Divide by den, one number per query: phi_q times Σ_j phi_k (phi_k.sum(dim=-2)), plus "
        "eps; it plays the part of the softmax's denominator.",
    ),
)
LINEAR_WRONG_AXIS = misconception(
    "linear-normaliser-wrong-axis",
    "Your linear attention normalises over the wrong axis: query i must be divided by "
    "phi(q_i)ᵀ Σ_j phi(k_j), a sum over the keys j (its own row of the kernel matrix).",
    (
        "Each query's weights must sum to 1 over the keys it attends to: the normaliser of "
        "query i is a sum over the keys j, one number per query.",
        "Sum phi_k over the positions axis (dim=-2), which gives (..., d); a product with phi_q "
        "then gives (..., T, 1). Not a sum over the queries, nor over d_v.",
        "z = Σ_j phi(k_j) sums phi_k over the positions, (..., T, d) -> (..., d); den is phi_q "
        "times z as a column, (..., T, d) x (..., d, 1) -> (..., T, 1), one number per query.",
    ),
)
LINEAR_FEATURE_MAP = misconception(
    "linear-feature-map",
    "Your feature map is not phi(x) = elu(x) + 1{measured}. That map is exp(x) below 0 and "
    "x + 1 above, always > 0; plain elu, relu or no map at all can be zero or negative (the "
    "'weights' phi(q)·phi(k) can be negative, the normaliser close to 0), and other positive "
    "maps (exp, relu + 1, softplus) weigh the keys differently.",
    (
        "Linear attention replaces exp(q·k) by phi(q)·phi(k), with a feature map phi that must "
        "be positive, so that every weight is positive and the normaliser never vanishes. This "
        "kit uses Katharopoulos et al.'s map, elu(x) + 1.",
        "Apply torch.nn.functional.elu and add 1, to q and to k separately, before any product.",
        "phi(x) = F.elu(x) + 1, applied to q and to k: every feature is > 0, so every weight is "
        "> 0 and the normaliser never vanishes.",
    ),
)
LINEAR_SCALED = misconception(
    "linear-scaled",
    "Your linear attention scales {which} by 1/√d = 1/{root:.4g} before the feature map; "
    "linear attention has no 1/√d scaling (only softmax attention divides its scores).",
    (
        "Softmax attention's 1/√d keeps the spread of the scores in check before the exp. "
        "Linear attention has no exp, and its normaliser absorbs a common scale: the feature "
        "map takes q and k as they are.",
        "Remove the division by math.sqrt(d) (or the product with d ** -0.5) on q or k before "
        "the feature map.",
        "phi(x) = F.elu(x) + 1, on q and k as given. A 1/√d on the kernel phi(q)·phi(k) "
        "itself would cancel in the normaliser; inside phi it does not.",
    ),
)
LINEAR_CAUSAL_IGNORED = misconception(
    "linear-causal-ignored",
    "With causal=True your linear attention still sums over every key, future ones included.",
    (
        "With causal=True query i may use only the keys j <= i, so both of its sums (the "
        "numerator and the normaliser) stop at position i instead of running over all keys.",
        "Running sums along the positions: torch.cumsum along the T axis, of the outer products "
        "phi(k_j) v_jᵀ and of phi(k_j).",
        "For causal=True, use running sums over j <= i: torch.cumsum(..., dim=-3) for Σ phi(k_j) "
        "v_jᵀ and torch.cumsum(phi_k, dim=-2) for the normaliser.",
    ),
)
LINEAR_CAUSAL_EXCLUSIVE = misconception(
    "linear-causal-excludes-self",
    "Your causal linear attention sums over j < i: query i does not see its own key.",
    (
        "Causal attention lets a query see its own key: query i sums over j <= i, the key at "
        "position i included.",
        "torch.cumsum already includes entry i at position i: no shift, and no subtraction of "
        "the current term.",
        "cumsum is inclusive (entry i includes item i): do not shift it by one.",
    ),
)
LINEAR_QUADRATIC = misconception(
    "linear-builds-TxT",
    "Your linear attention (causal={causal}) builds a tensor that grows with T²: when T "
    "doubles from {T1} to {T2}, the largest tensor grows from {n1} to {n2} elements "
    "({op}, shape {shape}). Linear attention must never build the (T, T) matrix.",
    (
        "Linear attention pays off only if it never builds the (T, T) matrix of weights: "
        "associativity lets you multiply phi(k)ᵀ by v first, a (d, d_v) summary whose size does "
        "not depend on T.",
        "Non-causal: the product of phi_k transposed (last two dimensions) with v comes before "
        "the product with phi_q. Causal: torch.cumsum along T, never a masked (T, T) matrix.",
        "Non-causal: multiply phi_kᵀ @ v first, (d, d_v), then phi_q @ that. Causal: running "
        "sums (cumsum along T) of phi(k_j) v_jᵀ, (T, d, d_v), instead of a masked (T, T) matrix.",
    ),
)
LINEAR_OPS_QUADRATIC = misconception(
    "linear-op-count-quadratic",
    "Your linear attention (causal={causal}) runs {o1} tensor ops at T = {T1} and {o2} at "
    "T = {T2}: the work grows with T², e.g. a Python loop over pairs of positions.",
    (
        "The cost of linear attention must grow in proportion to T; a loop over pairs of "
        "positions grows with T², whatever each step computes.",
        "Replace the Python loops by operations on whole tensors: matrix products (@) for the "
        "sums over keys, torch.cumsum for the causal running sums.",
        "Use whole-tensor operations (matmul, cumsum) instead of Python loops over positions.",
    ),
)
LINEAR_PEAK_QUADRATIC = misconception(
    "linear-memory-grows-TxT",
    "Your linear attention (causal={causal}) holds memory that grows with T²: torch's "
    "allocator held {p1} bytes at once at T = {T1} and {p2} at T = {T2}, although no single "
    "tensor the op recorder saw grew that fast (many smaller tensors alive at once, or work "
    "done out of the recorder's sight).",
    (
        "Memory counts too: many tensors alive at once can add up to T², even when each one is "
        "small. Linear attention holds memory in proportion to T.",
        "Keep only the running sums and the outputs: no list of tensors per position, and no "
        "(T, T) built in pieces.",
        "Keep only running sums: nothing whose total size grows with T², in one tensor or many.",
    ),
)
CHUNKED_OVERFLOW = misconception(
    "chunked-overflow",
    "With large scores (|q·k|/√d in the hundreds) your chunked attention gives inf or NaN: "
    "exp(score) overflows (float32 overflows above exp(88)).",
    (
        "exp overflows for large arguments (above about 88 in float32). Softmax does not change "
        "when one constant is subtracted from all the scores of a query, so the online softmax "
        "subtracts the running maximum before every exp.",
        "Keep a running maximum per query, (..., T, 1), updated in each chunk with "
        "torch.maximum and amax(dim=-1, keepdim=True), and exponentiate the scores minus it.",
        "Keep a running maximum m per query and exponentiate exp(s - m_new), never exp(s): every "
        "term is then <= 1.",
    ),
)
CHUNKED_NOT_SHIFT_INVARIANT = misconception(
    "chunked-not-shift-invariant",
    "Adding the same amount (100 to 300) to every score of a query must not change attention "
    "(the softmax cancels it), but it changed your chunked attention's output by up to "
    "{err:.3g} (causal={causal}).",
    (
        "Softmax does not change when the same amount is added to every score of a query; exact "
        "chunked attention keeps that property only if it subtracts each query's own running "
        "maximum.",
        "The maximum is per query (amax over the keys axis, keepdim=True), runs across chunks "
        "(torch.maximum with the previous one), and the old sums are rescaled when it grows.",
        "Exponentiate s - m_new with the running maximum m_new of each query, and rescale the "
        "running sums by exp(m - m_new): no fixed offset, no maximum of the first chunk only.",
    ),
)
CHUNKED_NO_RESCALE = misconception(
    "chunked-no-rescale",
    "Your chunked attention does not rescale the running sums when the maximum grows: sums "
    "taken against the old maximum m are mixed with terms taken against the new one.",
    (
        "Sums taken against an old maximum m are in other units than terms taken against the "
        "new maximum m_new: before adding, convert the old sums with the factor exp(m - m_new).",
        "Compute the factor exp(m - m_new) per query with torch.exp, and multiply both running "
        "sums (the normaliser l and the accumulator acc) by it before adding the chunk's terms.",
        "alpha = exp(m - m_new); then l ← l·alpha + Σ_c p and acc ← acc·alpha + p @ v_chunk: "
        "rescale both, before adding the new chunk.",
    ),
)
CHUNKED_PER_CHUNK = misconception(
    "chunked-softmax-per-chunk",
    "Your chunked attention normalises each chunk on its own and adds (or averages) the "
    "results: the softmax must be over all keys at once.",
    (
        "A softmax over all keys is not a sum or an average of softmaxes over chunks, whose "
        "weights each sum to 1 on their own. Exact chunking keeps unnormalised sums and "
        "normalises once.",
        "Carry the running sum l (of the exps) and the accumulator acc (of the exps times v) "
        "from chunk to chunk, and divide only after the loop.",
        "Keep the unnormalised sums l and acc across chunks and divide once, at the end: "
        "out = acc / l.",
    ),
)
CHUNKED_CHUNK_DEPENDENT = misconception(
    "chunked-depends-on-chunk-size",
    "Your chunked attention (causal={causal}) gives different results in chunks of 4 keys and "
    "in one chunk of all {T} keys (largest difference {err:.3g}): the chunks are not combined "
    "exactly.",
    (
        "Exact chunked attention gives the same result whatever the chunk size: chunking "
        "changes the order of the work, not the answer. A difference means that the chunks are "
        "combined inexactly.",
        "Check the update of the three running quantities of each query: the maximum m, the sum "
        "l and the accumulator acc, both sums rescaled by exp(m - m_new), and one division at "
        "the end.",
        "Exact chunking: running maximum m, l = l * exp(m - m_new) + Σ exp(s - m_new), "
        "acc = acc * exp(m - m_new) + exp(s - m_new) @ v_chunk, and out = acc / l once at the end.",
    ),
)
CHUNKED_NOT_AVERAGE = misconception(
    "chunked-weights-not-normalised",
    "With every key the same, attention gives each query the mean of the values (all scores "
    "equal, so all weights are 1/T); your chunked attention gives {got:.6g} where the mean is "
    "{want:.6g}: its weights do not sum to 1, or it computes something else.",
    (
        "When all keys are equal, all scores of a query are equal and softmax gives each key "
        "the weight 1/T: the output is the mean of the values. This tests that the weights sum "
        "to 1.",
        "The sum l adds exp(s - m) over every key of every chunk, rescaled like acc, and the "
        "output is acc divided by l.",
        "out = acc / l, where l sums exp(s - m) over every key seen, in every chunk.",
    ),
)
CHUNKED_DROPS_TAIL = misconception(
    "chunked-drops-tail",
    "When T is not a multiple of chunk_size, your chunked attention skips the last, shorter "
    "chunk of keys (T = {T}, chunk_size = {chunk}).",
    (
        "Every key must be seen, including those of the last, shorter chunk when T is not a "
        "multiple of chunk_size.",
        "Let the chunk starts cover all of 0 to T and the last chunk be shorter; the integer "
        "division T // chunk_size drops the remainder.",
        "Loop with range(0, T, chunk_size) and cut each chunk at min(start + chunk_size, T); "
        "slicing k[..., start:start + chunk_size] does this for you.",
    ),
)
CHUNKED_CAUSAL_IGNORED = misconception(
    "chunked-causal-ignored",
    "With causal=True your chunked attention still lets queries see future keys.",
    (
        "With causal=True no query may see the keys after it, in any chunk: the mask applies "
        "chunk by chunk, to that chunk's scores.",
        "In each chunk compare the key positions (an arange from the chunk's start to its stop) "
        "with the query positions (an arange over T, as a column), and set the blocked scores "
        "to -inf with masked_fill before the maximum and the exp.",
        "In each chunk, block key position start + c when it is > the query position, with a "
        "(T, c) mask built from two aranges, before taking the maximum and the exp.",
    ),
)
CHUNKED_CAUSAL_DIAGONAL = misconception(
    "chunked-causal-blocks-diagonal",
    "Your causal mask also blocks the diagonal: query i may not see key i, only j < i. Query 0 "
    "then sees no key at all (NaN or 0), and every other query misses its own key.",
    (
        "Causal attention blocks the future only: each query sees its own key. Blocking the "
        "diagonal as well leaves the first query nothing to attend to.",
        "Use a strict comparison: a key is blocked when its position is greater than the "
        "query's, not greater or equal.",
        "Causal blocks j > i only: mask = cols > rows (key position greater than the query's), "
        "not cols >= rows.",
    ),
)
CHUNKED_WRONG_SCALE = misconception(
    "chunked-wrong-scale",
    "Your chunked attention divides the scores by {used}; exact attention divides them by "
    "√d = {expected:.4g} (d = {d}, the width of q and k).",
    (
        "Exact attention divides every score by √d, d being the width of q and k; the chunked "
        "version must compute the very same scores.",
        "Take d from q's last dimension and multiply each chunk's scores by one over its square "
        "root (math.sqrt).",
        "The scale is 1 / √d with d = q.size(-1), the width of q and k, applied to every "
        "chunk's scores q @ k_chunkᵀ.",
    ),
)
CHUNKED_QUADRATIC = misconception(
    "chunked-quadratic-memory",
    "Your chunked attention (causal={causal}) creates a tensor of {n} elements ({op}, shape "
    "{shape}); with T = {T}, chunk_size = {chunk} and B·H = {BH}, no tensor may exceed "
    "{limit} elements (T × max(chunk_size, d, d_v) per batch and head).",
    (
        "Chunking is about memory: at no time may a (T, T) tensor exist, neither the scores nor "
        "the mask; per chunk, (T, chunk_size) is enough.",
        "Build each chunk's mask from that chunk's key positions (an arange from start to stop) "
        "against the query positions (a column), broadcast to (T, c).",
        "Never build all (T, T) scores, nor a (T, T) causal mask: per chunk, build the (T, c) "
        "scores and a (T, c) mask from torch.arange(T)[:, None] and torch.arange(start, stop).",
    ),
)
CHUNKED_PEAK = misconception(
    "chunked-memory-peak",
    "Your chunked attention (causal={causal}) held {peak} bytes at once (torch's allocator), "
    "more than half of what all (T, T) float32 scores take ({full} bytes), although no single "
    "tensor was too large: many were alive at once (chunks kept in a list?), or were made out "
    "of the op recorder's sight.",
    (
        "Small tensors add up when all are kept: the online softmax folds each chunk into m, l "
        "and acc, and needs it no more.",
        "Do not append the chunks' scores or probabilities to a list, nor concatenate them; "
        "replace the running tensors in each iteration.",
        "Let each chunk's scores go once they are folded into m, l and acc: keep no list of "
        "chunks, and concatenate nothing of size (T, T).",
    ),
)
CHUNKED_BUILTIN = misconception(
    "chunked-calls-builtin",
    "Your chunked attention calls PyTorch's fused attention ({op}); this exercise is to write "
    "the online softmax yourself.",
    (
        "This exercise is to write the online softmax yourself: calling PyTorch's fused "
        "attention skips what it teaches.",
        "Use basic tensor operations only (matrix product, amax, torch.maximum, torch.exp, "
        "sum, masked_fill), not F.scaled_dot_product_attention.",
        "Follow the numbered steps in the TODO: a loop over key chunks with a running maximum m, "
        "running sum l and accumulator acc.",
    ),
)
NOT_RECORDED = misconception(
    "computation-not-recorded",
    "{what}: {detail}. The grader measures memory and cost by recording the tensor operations "
    "your code runs; work done out of its sight cannot be credited.",
    (
        "The grader measures memory and cost from the tensor operations your code runs; work "
        "done out of its sight (in numpy, or with torch's modes switched) leaves nothing to "
        "credit.",
        "Compute with torch operations on the given tensors and return a tensor they made; no "
        ".numpy(), and do not start or stop torch's profiler or dispatch modes.",
        "Compute with torch operations on the given tensors only: no numpy, and leave torch's "
        "dispatch modes and profiler alone.",
    ),
)

# --------------------------------------------------------------------------- models
# What a computation, right or with a known mistake, gives: float64, cast to the inputs' dtype
# (the expected dtype; verdicts cast the student's result to it, never the reverse).


def _dtype(x):
    return x["q"].dtype


def _floating(got, key, what, shape):
    """got[key]: a tensor of `shape` with a floating dtype, or a Failure naming why."""
    value = tensor(got, key, what, shape=shape)
    if not value.is_floating_point():
        raise Failure(WRONG_DTYPE, what=what, got=value.dtype, expected="a floating dtype")
    return value


def _positions(T):
    return torch.arange(T)[:, None], torch.arange(T)[None, :]  # i (T, 1), j (1, T)


@model
def _attend(q, k, v, blocked=None, scale=None):
    """(out, weights) of softmax attention in float64; fully blocked rows give NaN."""
    q, k, v = q.double(), k.double(), v.double()
    s = q @ k.transpose(-2, -1) / (math.sqrt(q.size(-1)) if scale is None else scale)
    if blocked is not None:
        s = s.masked_fill(blocked, float("-inf"))
    w = s.softmax(dim=-1)
    return w @ v, w


@model
def _masked(x, blocked):
    """(out, weights) under `blocked` (True = blocked), fully blocked rows zero."""
    out, w = _attend(x["q"], x["k"], x["v"], blocked)
    return torch.nan_to_num(out).to(_dtype(x)), torch.nan_to_num(w).to(_dtype(x))


@model
def _strided_blocked(T, s, mistake):
    """The (T, T) mask (True = blocked) of strided attention with a named mistake."""
    i, j = _positions(T)
    dist = i - j
    past = dist >= 0
    kept = {
        "no band": lambda: past & (dist % s == 0),
        "no columns": lambda: past & (dist < s),
        "centred": lambda: (dist.abs() < s) | (dist.abs() % s == 0),
        "future": lambda: (dist < s) | (dist % s == 0),
        # (dist <= s is no mistake: dist == s is a multiple of s anyway.)
        "stride + 1": lambda: past & ((dist < s + 1) | (dist % (s + 1) == 0)),
        "band - 1": lambda: past & ((dist < s - 1) | (dist % s == 0)),
        "absolute": lambda: past & ((dist < s) | (j % s == 0)),
    }[mistake]()
    return ~kept


def _pattern_candidates(x, which, wrong):
    """[(misconception, lazy output, details)] for each (misconception, lazy blocked mask,
    details)."""
    index = 0 if which == "out" else 1
    return [(m, (lambda b=b: _masked(x, b())[index]), details) for m, b, details in wrong]


PHI = {
    "elu(x) + 1": lambda t: F.elu(t) + 1,
    "elu(x)": F.elu,
    "relu(x)": F.relu,
    "x (no map)": lambda t: t,
    "exp(x)": torch.exp,
    "relu(x) + 1": lambda t: F.relu(t) + 1,
    "softplus(x)": F.softplus,
}


@model
def _linear(x, *, phi="elu(x) + 1", causal=False, norm="keys", diagonal=0, q_div=1, k_div=1):
    """Linear attention in its quadratic form, A = phi(q) phi(k)ᵀ, in float64."""
    q, k, v = (x[n].double() for n in ("q", "k", "v"))
    A = PHI[phi](q / q_div) @ PHI[phi](k / k_div).transpose(-2, -1)  # (..., T, T)
    if causal:
        A = A.tril(diagonal)
    num = A @ v
    eps = 1e-6
    if norm == "keys":
        out = num / (A.sum(dim=-1, keepdim=True) + eps)
    elif norm == "queries":
        out = num / (A.sum(dim=-2)[..., None] + eps)
    elif norm == "values":
        out = num / (num.sum(dim=-1, keepdim=True) + eps)
    else:
        out = num
    return out.to(_dtype(x))


def _linear_candidates(x, causal):
    root = math.sqrt(x["q"].size(-1))
    found = [
        (LINEAR_FEATURE_MAP, lambda p=p: _linear(x, phi=p, causal=causal), {"measured": ""})
        for p in PHI
        if p != "elu(x) + 1"
    ]
    for which, div in (("q", (root, 1)), ("k", (1, root)), ("q and k", (root, root))):
        found.append(
            (
                LINEAR_SCALED,
                lambda div=div: _linear(x, causal=causal, q_div=div[0], k_div=div[1]),
                {"which": which, "root": root},
            )
        )
    found += [
        (LINEAR_NO_NORMALISER, lambda: _linear(x, causal=causal, norm="none"), {}),
        (LINEAR_WRONG_AXIS, lambda: _linear(x, causal=causal, norm="queries"), {}),
        (LINEAR_WRONG_AXIS, lambda: _linear(x, causal=causal, norm="values"), {}),
    ]
    if causal:
        found += [
            (LINEAR_CAUSAL_IGNORED, lambda: _linear(x), {}),
            (LINEAR_CAUSAL_EXCLUSIVE, lambda: _linear(x, causal=True, diagonal=-1), {}),
        ]
    return found


@model
def _exact(x, causal, *, keys=None, strict=False, scale=None):
    """Exact softmax attention (optionally over the first `keys` keys only), float64, cast to
    the inputs' dtype. strict: the causal mask blocks the diagonal too."""
    T = x["q"].size(-2)
    i, j = _positions(T)
    blocked = torch.zeros(T, T, dtype=torch.bool)
    if causal:
        blocked = j >= i if strict else j > i
    if keys is not None:
        blocked = blocked | (torch.arange(T) >= keys)[None, :]
    return _attend(x["q"], x["k"], x["v"], blocked, scale)[0].to(_dtype(x))


@model
def _online(x, causal, chunk, *, rescale_l=True, rescale_acc=True, per_chunk=None):
    """The chunked loop with a chosen mistake, in float64 (the mistake, not the rounding)."""
    q, k, v = (x[n].double() for n in ("q", "k", "v"))
    T, d = q.shape[-2:]
    i = torch.arange(T)[:, None]
    m = torch.full((*q.shape[:-1], 1), -math.inf, dtype=torch.float64)
    l = torch.zeros_like(m)
    acc = torch.zeros((*q.shape[:-1], v.size(-1)), dtype=torch.float64)
    parts = []
    for start in range(0, T, chunk):
        s = q @ k[..., start : start + chunk, :].transpose(-2, -1) / math.sqrt(d)
        if causal:
            s = s.masked_fill(torch.arange(start, min(start + chunk, T))[None, :] > i, -math.inf)
        if per_chunk:
            w = torch.nan_to_num(s.softmax(dim=-1))
            parts.append(w @ v[..., start : start + chunk, :])
            continue
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        alpha = torch.exp(m - m_new)
        p = torch.exp(s - m_new)
        l = (l * alpha if rescale_l else l) + p.sum(dim=-1, keepdim=True)
        acc = (acc * alpha if rescale_acc else acc) + p @ v[..., start : start + chunk, :]
        m = m_new
    if per_chunk == "sum":
        return sum(parts).to(_dtype(x))
    if per_chunk == "mean":
        return (sum(parts) / len(parts)).to(_dtype(x))
    return (acc / l).to(_dtype(x))


def _mistaken_loops(x, causal, chunk):
    """The chunk-combining mistakes: per-chunk softmax, sums not rescaled."""
    found = [
        (CHUNKED_PER_CHUNK, lambda: _online(x, causal, chunk, per_chunk="sum"), {}),
        (CHUNKED_PER_CHUNK, lambda: _online(x, causal, chunk, per_chunk="mean"), {}),
    ]
    for rl, ra in ((False, False), (True, False), (False, True)):
        found.append(
            (
                CHUNKED_NO_RESCALE,
                lambda rl=rl, ra=ra: _online(x, causal, chunk, rescale_l=rl, rescale_acc=ra),
                {},
            )
        )
    return found


def _chunked_candidates(x, causal, chunk):
    T, d = x["q"].shape[-2:]
    found = []
    if causal:
        found.append((CHUNKED_CAUSAL_IGNORED, lambda: _exact(x, False), {}))
    if T % chunk and chunk < T:
        kept = T - T % chunk
        found.append(
            (CHUNKED_DROPS_TAIL, lambda: _exact(x, causal, keys=kept), {"T": T, "chunk": chunk})
        )
    names = {"1 (no scaling)": 1.0, f"d = {d}": float(d)}
    names[f"√d_v = √{x['v'].size(-1)}"] = math.sqrt(x["v"].size(-1))
    names[f"√T = √{T}"] = math.sqrt(T)
    for used, c in names.items():
        found.append(
            (
                CHUNKED_WRONG_SCALE,
                lambda c=c: _exact(x, causal, scale=c),
                {"used": used, "expected": math.sqrt(d), "d": d},
            )
        )
    if chunk < T:
        found += _mistaken_loops(x, causal, chunk)
    return found


def _blocks_diagonal(out, x):
    """Whether a causal output is exact attention under a mask that also blocks j = i (the
    rows after the first; the first row sees nothing then, whatever it gives). Never in the
    student copy, which has no model to tell."""
    try:
        strict = _exact(x, True, strict=True)
    except ModelUnavailable:
        return False
    return close(out[..., 1:, :], strict[..., 1:, :])


def _oracle(compute, reference):
    """compute(): a model's output, an oracle independent of the reference; in the student
    copy, which has no models, the reference output itself (the verdict rests on it alone)."""
    try:
        return compute()
    except ModelUnavailable:
        return reference


def _same(a, b, tol=None):
    """The student's own two runs agree (NaN where both are NaN counts as agreeing)."""
    a = a.to(b.dtype)
    return bool(torch.allclose(a, b, equal_nan=True, **(tol or tolerance(b.dtype))))


def _worst(a, b):
    diff = torch.nan_to_num((a.double() - b.double()).abs(), nan=float("inf"))
    return float(diff.max()) if diff.numel() else 0.0


# --------------------------------------------------------------------------- evidence


def _evidence(got, p, what):
    """The recorded run is the run that did the work: what the op recorder saw is what the
    profiler saw, and the returned tensor came out of a recorded op."""
    if got.get(p + "profiler_tampered"):
        raise Failure(NOT_RECORDED, what=what, detail="torch's profiler was stopped inside it")
    if got.get(p + "profiler_busy"):
        detail = "torch's profiler was already running when it was called (grading starts none)"
        raise Failure(NOT_RECORDED, what=what, detail=detail)
    if not got.get(p + "returned_recorded"):
        detail = "the tensor it returned was not made by any operation the recorder saw"
        raise Failure(NOT_RECORDED, what=what, detail=detail)
    seen, profiled = int(got[p + "matmuls"]), int(got[p + "profiled_matmuls"])
    # The profiler sees each recorded matrix product twice (once through the recorder).
    if got.get(p + "profiled") and profiled > 2 * seen:
        detail = (
            f"torch's profiler saw {profiled} matrix-product calls, the op recorder {seen} "
            "(a recorded product shows up twice in the profiler, once through the recorder)"
        )
        raise Failure(NOT_RECORDED, what=what, detail=detail)


def _enough_work(got, p, what, need, of):
    if int(got[p + "produced"]) < need:
        detail = (
            f"the operations the recorder saw produced {got[p + 'produced']} elements in all, "
            f"fewer than the {need} {of}"
        )
        raise Failure(NOT_RECORDED, what=what, detail=detail)


# --------------------------------------------------------------------------- verdicts


def _compare_pair(got, want, prefix, what, x, wrong):
    shape = want[f"{prefix}/out"].shape
    out = _floating(got, f"{prefix}/out", f"{what}'s output", shape)
    weights = _floating(
        got, f"{prefix}/weights", f"{what}'s weights", want[f"{prefix}/weights"].shape
    )
    assert_close(
        weights,
        want[f"{prefix}/weights"],
        f"{what}'s weights",
        _pattern_candidates(x, "weights", wrong),
    )
    assert_close(
        out, want[f"{prefix}/out"], f"{what}'s output", _pattern_candidates(x, "out", wrong)
    )


LOCAL_ATTENTION = CHECKS.exercise("local_attention", probe=probe.probe_local)


@LOCAL_ATTENTION.check(
    "local",
    "local_attention matches the reference: attention under a causal window (windows 1, w, T, > T)",
    2,
    inputs=probe.inputs_pattern,
)
def verdict_local(got, want, x):
    T = x["q"].size(-2)
    for n, w in enumerate(x["windows"]):
        # The mistaken masks are sliding_window_mask's (masks' judge names them too).
        wrong = [
            (LOCAL_OFF_BY_ONE, "wider", {"seen": w + 1}),
            (LOCAL_NOT_CAUSAL, "two-sided", {}),
            (LOCAL_NOT_CAUSAL, "future", {}),
        ]
        if w > 1:
            wrong.append((LOCAL_OFF_BY_ONE, "narrower", {"seen": w - 1}))
        wrong = [
            (m, lambda k=k, w=w: window_with_mistake(T, w, k), {"window": w, "before": w - 1, **d})
            for m, k, d in wrong
        ]
        _compare_pair(got, want, f"w{n}", f"local_attention(window={w})", x, wrong)


STRIDED_ATTENTION = CHECKS.exercise("strided_attention", probe=probe.probe_strided)


@STRIDED_ATTENTION.check(
    "strided",
    "strided_attention matches the reference: a local band plus every stride-th key back "
    "(strides 1, 2, 3, s); stride 0 raises ValueError",
    2,
    inputs=probe.inputs_pattern,
)
def verdict_strided(got, want, x):
    T = x["q"].size(-2)
    # Largest stride first: with stride 2, a band one key too narrow is no band at all, and
    # the larger strides tell those two mistakes apart.
    for n, s in sorted(enumerate(x["strides"]), key=lambda ns: -ns[1]):
        wrong = [
            (STRIDED_NO_BAND, "no band"),
            (STRIDED_NO_COLUMNS, "no columns"),
            (STRIDED_NOT_CAUSAL, "centred"),
            (STRIDED_NOT_CAUSAL, "future"),
            (STRIDE_OFF_BY_ONE, "stride + 1"),
            (STRIDE_OFF_BY_ONE, "band - 1"),
            (STRIDED_ABSOLUTE, "absolute"),
        ]
        wrong = [
            (m, lambda k=k, s=s: _strided_blocked(T, s, k), {"stride": s, "before": s - 1})
            for m, k in wrong
        ]
        _compare_pair(got, want, f"s{n}", f"strided_attention(stride={s})", x, wrong)
    if got.get("stride0") != "ValueError":
        raise Failure(STRIDE_NOT_VALIDATED, got=got.get("stride0"))


def _linear_verdict(got, want, x, causal):
    what = f"linear_attention(causal={causal})"
    out = _floating(got, "out", what, want["out"].shape)
    # The quadratic form of the same kernel, computed here: an oracle independent of want.
    quadratic = _oracle(lambda: _linear(x, causal=causal), want["out"])
    if not close(out, quadratic):
        # A map that is not positive makes some normalisers nearly 0, where float32 rounding
        # is amplified: to *name* that mistake (never to pass), compare with a loose tolerance.
        loose = {"atol": 1e-3, "rtol": 1e-2}
        for phi in ("elu(x)", "relu(x)", "x (no map)"):
            try:
                mapped = _linear(x, phi=phi, causal=causal)
            except ModelUnavailable:  # the student copy: not named there
                break
            if close(out, mapped, loose):
                raise Failure(LINEAR_FEATURE_MAP, measured=f" (it behaves like phi(x) = {phi})")
    assert_close(out, quadratic, what, _linear_candidates(x, causal))
    assert_close(out, want["out"], what)


LINEAR_ATTENTION = CHECKS.exercise("linear_attention", probe=probe.probe_linear)


@LINEAR_ATTENTION.check(
    "linear",
    "linear_attention matches the reference: the elu(x) + 1 kernel, normalised per query",
    2,
    inputs=probe.inputs_linear,
)
def verdict_linear(got, want, x):
    _linear_verdict(got, want, x, causal=False)


@LINEAR_ATTENTION.check(
    "linear-feature-map",
    "linear_attention's feature map is elu(x) + 1, measured from your outputs (d = 1)",
    1,
    inputs=probe.inputs_feature_map,
)
@no_reference
def verdict_feature_map(got, want, x):
    # Each row is phi(q) (phi(0), phi(b)) / normaliser: the ratio of its two entries is
    # phi(b) / phi(0), the student's own map at b, whatever the normaliser or a scale of q.
    out = _floating(got, "out", "linear_attention's output", x["v"].shape).double()
    first, second = out[..., 0], out[..., 1]
    if not (torch.isfinite(out).all() and (first > 0).all()):
        measured = ": your outputs give phi(0) = 0 (or NaN), as plain elu, relu or no map do"
        raise Failure(LINEAR_FEATURE_MAP, measured=measured)
    b = x["k"][:, 1:, 0].double().expand_as(first)  # (n, 2): each query row sees key b
    ratio = second / first
    tol = {"atol": 1e-5, "rtol": 1e-4}  # a ratio of two float32 results
    if close(ratio, F.elu(b) + 1, tol):
        return
    for name, phi in PHI.items():
        if phi(torch.zeros(())) > 0 and close(ratio, phi(b) / phi(torch.zeros(())), tol):
            raise Failure(LINEAR_FEATURE_MAP, measured=f" (it behaves like phi(x) = {name})")
    worst = int((ratio - (F.elu(b) + 1)).abs().flatten().argmax())
    at, r, e = (
        float(b.flatten()[worst]),
        float(ratio.flatten()[worst]),
        float(F.elu(b).flatten()[worst] + 1),
    )
    measured = f" (your outputs give phi({at:.3g}) / phi(0) = {r:.4g}; elu(x) + 1 gives {e:.4g})"
    raise Failure(LINEAR_FEATURE_MAP, measured=measured)


@LINEAR_ATTENTION.check(
    "linear-causal",
    "causal linear_attention matches the reference: the same kernel under a causal mask",
    2,
    inputs=probe.inputs_linear,
    probe=probe.probe_linear_causal,
)
def verdict_linear_causal(got, want, x):
    _linear_verdict(got, want, x, causal=True)


@LINEAR_ATTENTION.check(
    "linear-cost",
    "linear_attention's largest tensor, allocations and op count grow linearly in T (T and 2T)",
    0,
    inputs=probe.inputs_linear_cost,
    probe=probe.probe_linear_cost,
    forgeable=True,
)
@no_reference
def verdict_linear_cost(got, want, x):
    T1, T2 = x["lengths"]
    for causal in (0, 1):
        a, b = f"c{causal}/T{T1}/", f"c{causal}/T{T2}/"
        n1, n2 = int(got[a + "largest"]), int(got[b + "largest"])
        # Linear growth doubles it, quadratic quadruples it; 3 lies between.
        if n2 > 3 * n1:
            raise Failure(
                LINEAR_QUADRATIC,
                causal=bool(causal),
                T1=T1,
                T2=T2,
                n1=n1,
                n2=n2,
                op=got[b + "largest_op"],
                shape=got[b + "largest_shape"],
            )
        o1, o2 = int(got[a + "ops"]), int(got[b + "ops"])
        if o2 > 3 * max(o1, 1):
            raise Failure(LINEAR_OPS_QUADRATIC, causal=bool(causal), T1=T1, T2=T2, o1=o1, o2=o2)
        what = f"linear_attention(causal={bool(causal)})"
        B, H, _, d = x["q"].shape
        for p, T in ((a, T1), (b, T2)):
            _evidence(got, p, what)
            need = B * H * T * (2 * d + x["v"].size(-1))
            _enough_work(got, p, what, need, "elements of phi(q), phi(k) and the output alone")
        p1, p2 = int(got[a + "peak_bytes"]), int(got[b + "peak_bytes"])
        if got[a + "profiled"] and got[b + "profiled"] and p2 > 3 * max(p1, 1):
            raise Failure(LINEAR_PEAK_QUADRATIC, causal=bool(causal), T1=T1, T2=T2, p1=p1, p2=p2)


CHUNKED_ATTENTION = CHECKS.exercise("chunked_attention", probe=probe.probe_chunked)


@CHUNKED_ATTENTION.check(
    "chunked",
    "chunked_attention matches the reference: exact attention (causal or not; "
    "chunk 1, 3, 4, T, > T)",
    3,
    inputs=probe.inputs_chunked,
)
def verdict_chunked(got, want, x):
    for n, (causal, chunk) in enumerate(x["cases"]):
        key = f"case{n}"
        what = f"chunked_attention(causal={causal}, chunk_size={chunk})"
        out = _floating(got, key, what, want[key].shape)
        exact = _oracle(lambda c=causal: _exact(x, c), want[key])
        if causal and not close(out, exact) and _blocks_diagonal(out, x):
            raise Failure(CHUNKED_CAUSAL_DIAGONAL)
        assert_close(out, exact, what, _chunked_candidates(x, causal, chunk))
        assert_close(out, want[key], what)


def _same_keys_gate(got, x, *, large=False):
    """One chunk of 4 equal keys: the student's output must be the mean of the values. A run
    that computes nothing (zeros, the values themselves) cannot give that; a wrong scale or a
    wrong way of combining chunks can (they are charged where they are named)."""
    what = "chunked_attention with every key the same"
    v = x["same_v"]
    out = _floating(got, "same", what, v.shape)
    mean = v.double().mean(dim=-2, keepdim=True).expand_as(v).to(_dtype(x))
    if close(out, mean):
        return
    if not torch.isfinite(out).all():
        if large:  # the scores are shifted by 100 to 300 there
            raise Failure(CHUNKED_OVERFLOW)
        raise Failure(NOT_FINITE, what=what, count=int((~torch.isfinite(out)).sum()))
    flat = int(torch.nan_to_num((out.double() - mean.double()).abs(), nan=1e30).argmax())
    raise Failure(
        CHUNKED_NOT_AVERAGE, got=float(out.flatten()[flat]), want=float(mean.flatten()[flat])
    )


@CHUNKED_ATTENTION.check(
    "chunked-rescale",
    "chunked_attention gives the same result in chunks of 4 as in one chunk, when each "
    "chunk raises the maximum",
    1,
    inputs=probe.inputs_chunked_rescale,
    probe=probe.probe_chunked_rescale,
)
@no_reference
def verdict_chunked_rescale(got, want, x):
    _same_keys_gate(got, x)
    T = x["q"].size(-2)
    for causal in (False, True):
        what = f"chunked_attention(causal={causal})"
        whole = _floating(got, f"c{int(causal)}/chunkT", what, x["v"].shape)
        chunks = _floating(got, f"c{int(causal)}/chunk4", what, x["v"].shape)
        if _same(chunks, whole):
            continue
        for mistake, replay, details in _mistaken_loops(x, causal, 4):
            try:
                replayed = replay()
            except ModelUnavailable:  # the student copy: these mistakes go unnamed
                break
            if close(chunks, replayed):
                raise Failure(mistake, **details)
        raise Failure(CHUNKED_CHUNK_DEPENDENT, causal=causal, T=T, err=_worst(chunks, whole))


@CHUNKED_ATTENTION.check(
    "chunked-large-logits",
    "chunked_attention stays finite and unchanged when every score of a query is shifted by "
    "100 to 300, up or down",
    1,
    inputs=probe.inputs_chunked_shift,
    probe=probe.probe_chunked_shift,
)
@no_reference
def verdict_chunked_shift(got, want, x):
    _same_keys_gate(got, x, large=True)
    # Loosened: scores of a few hundred carry float32 rounding of about 1e-5 each, and the
    # order in which q, k and the scale are multiplied moves them by that much.
    tol = {"atol": 1e-4, "rtol": 1e-4}
    for causal in (0, 1):
        what = f"chunked_attention(causal={bool(causal)})"
        base = _floating(got, f"c{causal}/k", what, x["v"].shape)
        for name in ("k_up", "k_down"):
            shifted = _floating(got, f"c{causal}/{name}", what, x["v"].shape)
            # Only what the shift broke: entries the small scores already gave as NaN are
            # another mistake's, charged where it is named.
            if (torch.isfinite(base) & ~torch.isfinite(shifted)).any():
                raise Failure(CHUNKED_OVERFLOW)
            if not _same(shifted, base, tol):
                err = _worst(shifted, base)
                raise Failure(CHUNKED_NOT_SHIFT_INVARIANT, err=err, causal=bool(causal))


@CHUNKED_ATTENTION.check(
    "chunked-memory",
    "chunked_attention's tensors stay within T × max(chunk_size, d, d_v) per batch and head, "
    "and never hold a (T, T)'s worth at once",
    0,
    inputs=probe.inputs_chunked_memory,
    probe=probe.probe_chunked_memory,
    forgeable=True,
)
@no_reference
def verdict_chunked_memory(got, want, x):
    for size, xs in x.items():
        B, H, T, d = xs["q"].shape
        chunk, d_v = xs["chunk"], xs["v"].size(-1)
        for causal in (0, 1):
            p = f"{size}/c{causal}/"
            what = f"chunked_attention(causal={bool(causal)}, chunk_size={chunk}), T = {T}"
            fused = got.get(p + "fused") or got.get(p + "profiled_fused")
            if fused:
                raise Failure(CHUNKED_BUILTIN, op=fused)
            limit = B * H * T * max(chunk, d, d_v)
            if size == "small" and int(got[p + "largest"]) > limit:
                raise Failure(
                    CHUNKED_QUADRATIC,
                    causal=bool(causal),
                    n=int(got[p + "largest"]),
                    op=got[p + "largest_op"],
                    shape=got[p + "largest_shape"],
                    T=T,
                    chunk=chunk,
                    BH=B * H,
                    limit=limit,
                )
            _evidence(got, p, what)
            # Every score is computed once: at least half the (T, T) of them, causal or not.
            _enough_work(got, p, what, B * H * T * T // 2, "scores attention needs at the least")
            # Half the (T, T) float32 scores: chunking with its running sums needs a few
            # (T, max(chunk, d, d_v)) tensors at once, T / (8 max(...)) >= 6 times less.
            full = B * H * T * T * 4
            if size == "big" and got[p + "profiled"] and int(got[p + "peak_bytes"]) > full // 2:
                raise Failure(
                    CHUNKED_PEAK, causal=bool(causal), peak=int(got[p + "peak_bytes"]), full=full
                )
            shape = (B, H, xs["rows"].numel(), d_v) if "rows" in xs else xs["v"].shape
            out = _floating(got, p + "out", what, shape)
            plain = _floating(got, p + "plain", what, shape)
            if not _same(out, plain):
                detail = "its result under the recorder differs from the same call unobserved"
                raise Failure(NOT_RECORDED, what=what, detail=detail)
