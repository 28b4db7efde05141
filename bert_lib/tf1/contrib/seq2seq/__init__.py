"""tf.contrib.seq2seq of TF 1.x: attention, decoding loops and the sequence loss.

What sequence-to-sequence code with attention of 2017-2019 used:
BahdanauAttention and LuongAttention over an encoder's outputs,
AttentionWrapper around a decoder cell (its state AttentionWrapperState),
BasicDecoder driven by a TrainingHelper (teacher forcing) or a
GreedyEmbeddingHelper (feeding back its own argmax) in dynamic_decode's
while loop, BeamSearchDecoder over tile_batch'ed memory and state (its
beams followed back by gather_tree), and sequence_loss (the weighted
per-token cross-entropy, averaged or summed over time and batch as its four
switches say, a zero denominator giving zero). Variables are named as TF
1.15 named them (`memory_layer/kernel`,
`decoder/attention_wrapper/lstm_cell/kernel`,
`.../bahdanau_attention/attention_v`, `.../attention_layer/kernel`), with
its initializers, so checkpoints move both ways. ScheduledOutputTrainingHelper
and the monotonic attentions are not here: using one names it, refused.
"""

from ...machinery.namespaces import Namespace
from .attention_wrapper import (
    AttentionMechanism,
    AttentionWrapper,
    AttentionWrapperState,
    BahdanauAttention,
    LuongAttention,
    hardmax,
)
from .beam_search import (
    BeamSearchDecoder,
    BeamSearchDecoderOutput,
    BeamSearchDecoderState,
    FinalBeamSearchDecoderOutput,
    gather_tree,
    gather_tree_from_array,
    tile_batch,
)
from .decoders import (
    BasicDecoder,
    BasicDecoderOutput,
    CustomHelper,
    Decoder,
    GreedyEmbeddingHelper,
    Helper,
    InferenceHelper,
    SampleEmbeddingHelper,
    ScheduledEmbeddingTrainingHelper,
    TrainingHelper,
    dynamic_decode,
)
from .loss import sequence_loss

_NOT_PROVIDED = (
    "BahdanauMonotonicAttention LuongMonotonicAttention "
    "ScheduledOutputTrainingHelper "
    "monotonic_attention safe_cumprod"
).split()


def seq2seq_module():
    """tf.contrib.seq2seq, also under its TF 1.15 module paths (python.ops.attention_wrapper,
    ...); the pieces not provided are refused by name."""
    module = Namespace(
        "tf.contrib.seq2seq",
        None,
        {
            "sequence_loss": sequence_loss,
            "tile_batch": tile_batch,
            "AttentionMechanism": AttentionMechanism,
            "BahdanauAttention": BahdanauAttention,
            "LuongAttention": LuongAttention,
            "AttentionWrapper": AttentionWrapper,
            "AttentionWrapperState": AttentionWrapperState,
            "hardmax": hardmax,
            "Helper": Helper,
            "TrainingHelper": TrainingHelper,
            "GreedyEmbeddingHelper": GreedyEmbeddingHelper,
            "SampleEmbeddingHelper": SampleEmbeddingHelper,
            "ScheduledEmbeddingTrainingHelper": ScheduledEmbeddingTrainingHelper,
            "CustomHelper": CustomHelper,
            "InferenceHelper": InferenceHelper,
            "Decoder": Decoder,
            "BasicDecoder": BasicDecoder,
            "BasicDecoderOutput": BasicDecoderOutput,
            "dynamic_decode": dynamic_decode,
            "BeamSearchDecoder": BeamSearchDecoder,
            "BeamSearchDecoderState": BeamSearchDecoderState,
            "BeamSearchDecoderOutput": BeamSearchDecoderOutput,
            "FinalBeamSearchDecoderOutput": FinalBeamSearchDecoderOutput,
            "gather_tree": gather_tree,
            "gather_tree_from_array": gather_tree_from_array,
        },
        {
            name: "tf.contrib.seq2seq.BasicDecoder with a GreedyEmbeddingHelper"
            for name in _NOT_PROVIDED
        },
    )
    module.__dict__["python"] = Namespace(
        "tf.contrib.seq2seq.python",
        None,
        {
            "ops": Namespace(
                "tf.contrib.seq2seq.python.ops",
                None,
                {
                    name: module
                    for name in (
                        "loss",
                        "attention_wrapper",
                        "basic_decoder",
                        "decoder",
                        "helper",
                        "beam_search_decoder",
                    )
                },
            )
        },
    )
    return module
