"""The pre-training data's instance engine: which sentence pairs and masks the recipe
makes, drawn exactly as the 2018 create_pretraining_data.py draws them.

For the same documents, vocabulary, recipe and seed the instances are
exactly the original's, in the same order: one `random.Random` is drawn
from in the order the original script draws it (random_draws makes the
same draws in fewer frames). Every random decision depends on the tokens
only through sentence lengths (and "##" pieces for whole word masking), so
a planner (InstancePlanner) makes the draws from lengths alone, tracking
truncation by offsets, and an InstanceAssembler builds the token lists from
its plans. The same engine serves documents of token ids (the script's
path, each instance serialized as soon as it is made) and documents of
token strings (the original's public functions, which
create_pretraining_data.py keeps as adapters over this module).
"""

import collections
import itertools

from absl import logging

import tokenization

from ..plumbing import tfrecord_format
from ..plumbing.progress import Progress
from . import pretraining_records
from .random_draws import Draws

CLS, SEP, MASK = "[CLS]", "[SEP]", "[MASK]"
# Features in the order the original inserts (and logs) them.
_FEATURE_NAMES = pretraining_records.FEATURE_NAMES


class Recipe(
    collections.namedtuple(
        "Recipe",
        [
            "max_seq_length",
            "dupe_factor",
            "short_seq_prob",
            "masked_lm_prob",
            "max_predictions_per_seq",
            "do_whole_word_mask",
        ],
    )
):
    """What decides which instances are made (create_pretraining_data.py's flags of the
    same names)."""


# One instance as the planner decides it. Segment A is sentences
# a_sentence_start:a_sentence_end of document a_document, its tokens cut to
# [a_token_start:a_token_end]; segment B likewise in b_document (another
# document when is_random_next). masked_positions are the sorted masked
# positions in [CLS] A [SEP] B [SEP]; masked_changes the (position, new
# token) pairs: [MASK] or a random vocabulary item (a position left as it is
# has none).
InstancePlan = collections.namedtuple(
    "InstancePlan",
    [
        "a_document",
        "a_sentence_start",
        "a_sentence_end",
        "a_token_start",
        "a_token_end",
        "b_document",
        "b_sentence_start",
        "b_sentence_end",
        "b_token_start",
        "b_token_end",
        "is_random_next",
        "masked_positions",
        "masked_changes",
    ],
)

# One instance assembled: tokens ([CLS] A [SEP] B [SEP] after masking, as
# ids or strings), the lengths of A and B, the masked positions and the
# original tokens there, and whether B is a random next sentence. Its
# fields are the arguments of pretraining_records' PretrainingExampleEncoder.encode.
Instance = collections.namedtuple(
    "Instance", "tokens num_a num_b masked_positions masked_labels is_random_next"
)


class InstancePlanner:
    """Makes every random decision of the recipe, knowing only sentence lengths.

    The draws depend on the tokens only through sentence lengths and, for
    whole word masking, through which tokens are "##" pieces. So the planner
    works on `doc_lengths[d]` (the token count of each sentence of document
    d) and, when `doc_kinds` is given, `doc_kinds[d]` (per sentence, bytes
    with 1 for a "##" piece, 2 for a [CLS] or [SEP] token, 0 otherwise).
    Without `doc_kinds`, documents must hold no [CLS] or [SEP] (true of
    tokenized text) and whole word masking must be off.

    Each instance becomes an InstancePlan, handed to `emit(plan)`.
    """

    def __init__(
        self,
        doc_lengths,
        doc_kinds,
        num_documents,
        recipe,
        vocab_items,
        mask_item,
        rng,
    ):
        if recipe.do_whole_word_mask and doc_kinds is None:
            raise ValueError("whole word masking needs the kinds of the tokens")
        self.doc_lengths = doc_lengths
        self.doc_kinds = doc_kinds
        self.num_documents = num_documents
        self.max_num_tokens = recipe.max_seq_length - 3
        self.short_seq_prob = recipe.short_seq_prob
        self.masked_lm_prob = recipe.masked_lm_prob
        self.max_predictions_per_seq = recipe.max_predictions_per_seq
        self.do_whole_word_mask = recipe.do_whole_word_mask
        self.vocab_items = vocab_items
        self.mask_item = mask_item
        self.draws = Draws(rng)

    def plan_document(self, d, emit):
        """Plans the instances of document `d`; returns how many."""
        doc_lengths = self.doc_lengths
        lengths = doc_lengths[d]
        draws = self.draws
        rand, randint = draws.random, draws.randint
        max_num_tokens = self.max_num_tokens
        target = max_num_tokens
        if rand() < self.short_seq_prob:
            target = randint(2, max_num_tokens)

        count = 0
        chunk_start = 0
        length = 0
        i = 0
        n = len(lengths)
        while i < n:
            length += lengths[i]
            if i == n - 1 or length >= target:
                size = i + 1 - chunk_start
                a_end = chunk_start + (randint(1, size - 1) if size >= 2 else 1)
                len_a = sum(lengths[chunk_start:a_end])
                if size == 1 or rand() < 0.5:
                    is_random_next = True
                    target_b = target - len_a
                    for _ in range(10):
                        db = randint(0, self.num_documents - 1)
                        if db != d:
                            break
                    other = doc_lengths[db]
                    s0 = s1 = randint(0, len(other) - 1)
                    len_b = 0
                    while s1 < len(other):
                        len_b += other[s1]
                        s1 += 1
                        if len_b >= target_b:
                            break
                    # The sentences not used for A go back to the document.
                    i = a_end - 1
                else:
                    is_random_next = False
                    db, s0, s1 = d, a_end, i + 1
                    len_b = length - len_a
                a0, a1, b0, b1 = self._truncation(len_a, len_b)
                kinds = None
                if self.doc_kinds is not None:
                    kinds = b"".join(
                        (
                            b"\x02",
                            b"".join(self.doc_kinds[d][chunk_start:a_end])[a0:a1],
                            b"\x02",
                            b"".join(self.doc_kinds[db][s0:s1])[b0:b1],
                            b"\x02",
                        )
                    )
                positions, changes = self.plan_masks(a1 - a0, b1 - b0, kinds)
                emit(
                    InstancePlan(
                        d,
                        chunk_start,
                        a_end,
                        a0,
                        a1,
                        db,
                        s0,
                        s1,
                        b0,
                        b1,
                        is_random_next,
                        positions,
                        changes,
                    )
                )
                count += 1
                chunk_start = i + 1
                length = 0
            i += 1
        return count

    def _truncation(self, len_a, len_b):
        """(a0, a1, b0, b1): the spans kept after trimming the longer side at random."""
        a0, a1, b0, b1 = 0, len_a, 0, len_b
        rand = self.draws.random
        max_num_tokens = self.max_num_tokens
        while (a1 - a0) + (b1 - b0) > max_num_tokens:
            if a1 - a0 > b1 - b0:
                if rand() < 0.5:
                    a0 += 1
                else:
                    a1 -= 1
            elif rand() < 0.5:
                b0 += 1
            else:
                b1 -= 1
        return a0, a1, b0, b1

    def plan_masks(self, num_a, num_b, kinds=None):
        """(sorted masked positions, [(position, new token)]) for one sequence.

        The sequence is [CLS] + num_a tokens + [SEP] + num_b tokens + [SEP]
        unless `kinds` (one byte per token, see the class) describes it.
        """
        if kinds is None:
            length = num_a + num_b + 3
            candidates = list(range(1, num_a + 1))
            candidates += range(num_a + 2, num_a + num_b + 2)
        else:
            length = len(kinds)
            whole_words = self.do_whole_word_mask
            candidates = []
            for i, kind in enumerate(kinds):
                if kind == 2:
                    continue
                if kind == 1 and whole_words and candidates:
                    candidates[-1].append(i)
                else:
                    candidates.append([i])
        draws = self.draws
        draws.shuffle(candidates)
        num_to_predict = min(
            self.max_predictions_per_seq, max(1, int(round(length * self.masked_lm_prob)))
        )
        if kinds is None:
            chosen = candidates[:num_to_predict]
        else:
            chosen = []
            for group in candidates:
                if len(chosen) >= num_to_predict:
                    break
                # Groups partition the positions, so none can overlap a chosen one.
                if len(chosen) + len(group) > num_to_predict:
                    continue
                chosen += group
        rand = draws.random
        mask_item = self.mask_item
        changes = []
        append = changes.append
        for i in chosen:
            if rand() < 0.8:
                append((i, mask_item))
            elif rand() >= 0.5:
                vocab_items = self.vocab_items
                append((i, vocab_items[draws.randint(0, len(vocab_items) - 1)]))
        chosen.sort()
        return chosen, changes


class InstanceAssembler:
    """Turns plans (see InstancePlanner) into token sequences."""

    def __init__(self, documents, cls, sep):
        self.documents = documents
        self.cls = cls
        self.sep = sep

    def assemble(self, plan):
        """The Instance an InstancePlan describes."""
        tokens_a = self._sentences(plan.a_document, plan.a_sentence_start, plan.a_sentence_end)
        tokens_b = self._sentences(plan.b_document, plan.b_sentence_start, plan.b_sentence_end)
        tokens = [self.cls]
        tokens += tokens_a[plan.a_token_start : plan.a_token_end]
        tokens.append(self.sep)
        tokens += tokens_b[plan.b_token_start : plan.b_token_end]
        tokens.append(self.sep)
        positions = plan.masked_positions
        labels = list(map(tokens.__getitem__, positions))
        for i, item in plan.masked_changes:
            tokens[i] = item
        return Instance(
            tokens,
            plan.a_token_end - plan.a_token_start,
            plan.b_token_end - plan.b_token_start,
            positions,
            labels,
            plan.is_random_next,
        )

    def _sentences(self, d, start, end):
        """The tokens of sentences start:end of document d, as one sequence."""
        doc = self.documents[d]
        if end - start == 1:
            return doc[start]
        return list(itertools.chain.from_iterable(doc[start:end]))


class LazyPerDocument:
    """doc -> f(doc), computed on first use: the public helpers see one document at a time."""

    def __init__(self, documents, compute):
        self.documents = documents
        self.compute = compute
        self.cache = {}

    def __getitem__(self, d):
        value = self.cache.get(d)
        if value is None:
            value = self.cache[d] = self.compute(self.documents[d])
        return value


def string_kinds(tokens):
    """The kinds InstancePlanner reads, of one sequence of token strings."""
    return bytes(2 if t in (CLS, SEP) else 1 if t.startswith("##") else 0 for t in tokens)


def string_planner(all_documents, recipe, vocab_words, rng):
    """A planner over documents of token strings (lists of sentences, each a list)."""
    return InstancePlanner(
        LazyPerDocument(all_documents, lambda doc: [len(s) for s in doc]),
        LazyPerDocument(all_documents, lambda doc: [string_kinds(s) for s in doc]),
        len(all_documents),
        recipe,
        vocab_words,
        MASK,
        rng,
    )


def string_instances(all_documents, document_index, recipe, vocab_words, rng):
    """The Instances of one document of token strings, drawn as the original draws them."""
    planner = string_planner(all_documents, recipe, vocab_words, rng)
    assembler = InstanceAssembler(all_documents, CLS, SEP)
    instances = []

    def emit(plan):
        instances.append(assembler.assemble(plan))

    planner.plan_document(document_index, emit)
    return instances


def mask_string_tokens(tokens, recipe, vocab_words, rng):
    """(output tokens, masked positions, original tokens there) of one token-string
    sequence, [CLS] and [SEP] included, drawn as the original draws them."""
    planner = string_planner([], recipe, vocab_words, rng)
    positions, changes = planner.plan_masks(0, 0, string_kinds(tokens))
    output_tokens = list(tokens)
    for i, item in changes:
        output_tokens[i] = item
    return output_tokens, positions, [tokens[i] for i in positions]


# ---------------------------------------------------------------------------
# Documents of token ids: the script's path


def vocab_items(tokenizer):
    """Vocabulary ids in file order of the distinct tokens (the original's vocab_words)."""
    vocab = tokenizer.vocab
    return [vocab[w] for w in vocab.keys()]


def _id_kinds(tokenizer):
    """Per vocabulary id: 2 for [CLS] and [SEP], 1 for a "##" piece, else 0."""
    vocab = tokenizer.vocab
    kinds = bytearray(max(vocab.values()) + 1)
    for token, index in vocab.items():
        kinds[index] = 2 if token in (CLS, SEP) else 1 if token.startswith("##") else 0
    return bytes(kinds)


def plan_instances(documents, tokenizer, recipe, rng, emit):
    """Plans every instance of the (already shuffled) id documents, as the original draws,
    handing each InstancePlan to `emit`. Returns how many instances there are.
    """
    doc_lengths = [[len(sentence) for sentence in doc] for doc in documents]
    doc_kinds = None
    if recipe.do_whole_word_mask:
        table = _id_kinds(tokenizer)
        doc_kinds = [[bytes(map(table.__getitem__, s)) for s in doc] for doc in documents]
    planner = InstancePlanner(
        doc_lengths,
        doc_kinds,
        len(documents),
        recipe,
        vocab_items(tokenizer),
        tokenizer.vocab[MASK],
        rng,
    )
    total = recipe.dupe_factor * len(documents)
    progress = Progress("Creating instances", total, "documents")
    done = count = 0
    for _ in range(recipe.dupe_factor):
        for d in range(len(documents)):
            count += planner.plan_document(d, emit)
            done += 1
            if done & 255 == 0:
                progress.update(done, extra=f", {count:,} instances")
    logging.info("Created %d instances from %d documents", count, len(documents))
    return count


def id_assembler(documents, tokenizer):
    """An InstanceAssembler over documents of token ids."""
    vocab = tokenizer.vocab
    return InstanceAssembler(documents, vocab[CLS], vocab[SEP])


def id_instances(documents, tokenizer, recipe, rng):
    """Every Instance of the id documents, in the original's final order: the documents
    are shuffled first (in place), then the instances."""
    draws = Draws(rng)
    draws.shuffle(documents)
    assemble = id_assembler(documents, tokenizer).assemble
    instances = []
    plan_instances(
        documents, tokenizer, recipe, rng, lambda plan: instances.append(assemble(plan))
    )
    draws.shuffle(instances)
    return instances


def create_records(documents, tokenizer, recipe, rng, encoder):
    """The serialized Examples of the recipe, in their final (shuffled) order.

    The documents are shuffled first (in place). Each record is serialized
    by `encoder` (pretraining_records.PretrainingExampleEncoder) as soon as it
    is planned; only the bytes are kept until the final shuffle.
    """
    draws = Draws(rng)
    draws.shuffle(documents)
    assemble = id_assembler(documents, tokenizer).assemble
    encode = encoder.encode
    records = []

    def emit(plan):
        records.append(encode(*assemble(plan)))

    plan_instances(documents, tokenizer, recipe, rng, emit)
    draws.shuffle(records)
    return records


# ---------------------------------------------------------------------------
# Writing


def _log_example(record, inv_vocab):
    """Logs one serialized Example the way the original logs its first 20."""
    feature = tfrecord_format.example_values(record)
    num_tokens = sum(feature["input_mask"])
    tokens = [inv_vocab[i] for i in feature["input_ids"][:num_tokens]]
    logging.info("*** Example ***")
    logging.info("tokens: %s", " ".join(tokenization.printable_text(x) for x in tokens))
    for name in _FEATURE_NAMES:
        logging.info("%s: %s", name, " ".join(str(x) for x in feature[name]))


def write_records(records, inv_vocab, output_files):
    """Writes serialized Examples round-robin to `output_files`; logs the first 20.

    The files appear under their names only once all are complete; local
    files are written with no TensorFlow.
    """
    for record in records[:20]:
        _log_example(record, inv_vocab)
    progress = Progress("Writing", len(records), "instances")
    tfrecord_format.write_tfrecords(records, output_files, progress, flag="--output_file")
    progress.update(len(records), force=True)
    logging.info("Wrote %d total instances", len(records))
