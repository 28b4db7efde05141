"""A text or a text pair as one BERT input sequence, without TensorFlow: "[CLS] a [SEP]"
or "[CLS] a [SEP] b [SEP]".

The original repeated these in each script; here each lives once: the
fewest positions a pair fits in (and the check of --max_seq_length against
it), the pair truncation and packing of the classifier, the feature
extractor and the Predictor, the " ||| " split of plain-text pairs, and
the stride of long-text windows. create_pretraining_data.py checks its
--max_seq_length against the same minimum without importing TensorFlow.
"""

import re

from ..plumbing.errors import UsageError

# [CLS] a [SEP] b [SEP]: the fewest positions a sentence pair fits in.
PAIR_MINIMUM_LENGTH = 5


def check_room_for_pairs(examples, max_seq_length, source):
    """Refuses a max_seq_length too short for the sentence pairs among `examples` (both
    texts would be cut to nothing); `source` names where they come from."""
    if max_seq_length < PAIR_MINIMUM_LENGTH and any(e.text_b for e in examples):
        raise UsageError(
            f"--max_seq_length={max_seq_length}: must be at least {PAIR_MINIMUM_LENGTH} for "
            f"the sentence pairs of {source} ([CLS] a [SEP] b [SEP])"
        )


def window_stride(stride, max_seq_length):
    """How many word pieces apart the windows of a long text start: `stride`
    (--window_stride), else half of what a window holds (max_seq_length less [CLS]
    and [SEP]), at least 1. A stride beyond a window is a UsageError: the windows
    would skip words."""
    max_pieces = max_seq_length - 2
    resolved = stride or max(1, max_pieces // 2)
    if not 1 <= resolved <= max_pieces:
        raise UsageError(
            f"--window_stride={stride} must be between 1 and max_seq_length - 2 "
            f"= {max_pieces}, or windows would skip words"
        )
    return resolved


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Pops tokens off the end of the longer list until both fit max_length.

    Trimming one token at a time from the longer side (from `tokens_b` on a
    tie) keeps more of the shorter text, which usually carries as much
    meaning per token as the longer one. Lists are changed in place.
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def pack_pair(tokenizer, tokens_a, tokens_b, max_seq_length):
    """Packs "[CLS] a [SEP]" or "[CLS] a [SEP] b [SEP]" into padded model inputs.

    A pair is first cut to max_seq_length - 3 pieces with truncate_seq_pair
    (changing `tokens_a` and `tokens_b` in place), a single text to
    max_seq_length - 2. Returns (tokens, input_ids, input_mask, segment_ids):
    the tokens unpadded; the three id lists padded with 0 to max_seq_length,
    the mask 1 on real tokens, segment ids 0 through the first [SEP] and 1
    after it.
    """
    if tokens_b:
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    else:
        tokens_a = tokens_a[: max_seq_length - 2]

    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += tokens_b + ["[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)

    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    padding = [0] * (max_seq_length - len(input_ids))
    input_mask = [1] * len(input_ids) + padding
    return tokens, input_ids + padding, input_mask, segment_ids + padding


_PAIR_PATTERN = re.compile(r"^(.*) \|\|\| (.*)$")


def split_text_pair(line):
    """Splits one plain-text input line into (text_a, text_b) at its last " ||| ".

    The line is stripped first; without the separator text_b is None. The
    feature extractor and the classifier's --predict_text_file read the same
    one-example-a-line files this way.
    """
    match = _PAIR_PATTERN.match(line.strip())
    if match is None:
        return line.strip(), None
    return match.group(1), match.group(2)
