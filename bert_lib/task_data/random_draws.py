"""Random draws exactly as `random.Random` makes them, with fewer Python frames per draw.

`random.Random` implements randint(a, b) as a + _randbelow(n) and shuffle
as Fisher-Yates from the end with _randbelow(i + 1), where _randbelow(n)
takes getrandbits(n.bit_length()) until the value is below n. Calling
getrandbits directly skips two or three Python frames per draw: the
pre-training data's instance engine makes tens of millions of them. The
direct path is checked against the library at import (FAST_DRAWS); should a
Python version ever draw otherwise, the library's methods are used.
"""

import random


def fast_draws(getrandbits):
    """(randint, shuffle) drawing exactly as random.Random's, from its getrandbits."""

    def randint(a, b):
        n = b - a + 1
        k = n.bit_length()
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        return a + r

    def shuffle(x):
        top = len(x) - 1
        while top > 0:
            # Every i in [lowest, top] draws the same number of bits, k.
            k = (top + 1).bit_length()
            lowest = (1 << (k - 1)) - 1
            for i in range(top, lowest - 1, -1):
                j = getrandbits(k)
                while j > i:
                    j = getrandbits(k)
                x[i], x[j] = x[j], x[i]
            top = lowest - 1

    return randint, shuffle


def fast_draws_match_library():
    """Whether fast_draws reproduces this Python's random.Random exactly."""
    for seed in (0, 1, 12345):
        ours, theirs = random.Random(seed), random.Random(seed)
        randint, shuffle = fast_draws(ours.getrandbits)
        for n in (1, 2, 3, 7, 64, 65, 200):
            a, b = list(range(n)), list(range(n))
            shuffle(a)
            theirs.shuffle(b)
            if a != b or randint(3, n + 2) != theirs.randint(3, n + 2):
                return False
        if ours.random() != theirs.random():
            return False
    return True


FAST_DRAWS = fast_draws_match_library()


class Draws:
    """The three kinds of draw the recipe makes, bound to one rng."""

    def __init__(self, rng):
        self.random = rng.random
        if FAST_DRAWS and type(rng) is random.Random:
            self.randint, self.shuffle = fast_draws(rng.getrandbits)
        else:
            self.randint = rng.randint
            self.shuffle = rng.shuffle
