"""SQuAD answers from the model's logits: the n-best spans and the prediction files.

write_predictions writes predictions.json, nbest_predictions.json and, for
SQuAD 2.0, null_odds.json, byte for byte as the original script does.
"""

import collections
import json
import math

from absl import logging

import tokenization

from ..plumbing import atomic_write

RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])

_PrelimPrediction = collections.namedtuple(
    "PrelimPrediction", ["feature_index", "start_index", "end_index", "start_logit", "end_logit"]
)

_NbestPrediction = collections.namedtuple("NbestPrediction", ["text", "start_logit", "end_logit"])


def _write_json_atomically(path, obj):
    """Writes json.dumps(obj, indent=4) + newline to `path`, all-or-nothing."""
    atomic_write.write_text(path, json.dumps(obj, indent=4) + "\n")


def _nbest_for_example(
    example,
    features,
    unique_id_to_result,
    n_best_size,
    max_answer_length,
    do_lower_case,
    version_2_with_negative,
    verbose_logging,
):
    """Returns (nbest, score_null): the ranked distinct answers of one example.

    score_null is the smallest start+end logit at [CLS] over the example's
    windows (v2 only; 1000000 otherwise).
    """
    prelim_predictions, null = _prelim_predictions(
        features, unique_id_to_result, n_best_size, max_answer_length, version_2_with_negative
    )
    seen_predictions = set()
    nbest = []
    for pred in prelim_predictions:
        if len(nbest) >= n_best_size:
            break
        if pred.start_index > 0:
            feature = features[pred.feature_index]
            tok_tokens = feature.tokens[pred.start_index : pred.end_index + 1]
            orig_doc_start = feature.token_to_orig_map[pred.start_index]
            orig_doc_end = feature.token_to_orig_map[pred.end_index]
            orig_tokens = example.doc_tokens[orig_doc_start : orig_doc_end + 1]
            # Glue "##" continuation pieces back on and normalise spacing.
            tok_text = " ".join(tok_tokens)
            tok_text = tok_text.replace(" ##", "").replace("##", "")
            tok_text = " ".join(tok_text.strip().split())
            orig_text = " ".join(orig_tokens)
            final_text = get_final_text(tok_text, orig_text, do_lower_case, verbose_logging)
            if final_text in seen_predictions:
                continue
        else:
            final_text = ""
        seen_predictions.add(final_text)
        nbest.append(
            _NbestPrediction(
                text=final_text, start_logit=pred.start_logit, end_logit=pred.end_logit
            )
        )

    # SQuAD 2.0: the null answer is always among the candidates.
    if version_2_with_negative and "" not in seen_predictions:
        nbest.append(
            _NbestPrediction(text="", start_logit=null.start_logit, end_logit=null.end_logit)
        )
    # With no valid span at all, a placeholder keeps the output well formed.
    if not nbest:
        nbest.append(_NbestPrediction(text="empty", start_logit=0.0, end_logit=0.0))
    return nbest, null.score


# The null ("no answer") candidate of an example: the smallest [CLS] start+end
# logit over its windows, the window it comes from and its two logits.
_NullScore = collections.namedtuple(
    "NullScore", ["score", "feature_index", "start_logit", "end_logit"]
)


def _prelim_predictions(
    features, unique_id_to_result, n_best_size, max_answer_length, version_2_with_negative
):
    """Returns (candidates, null): an example's answer spans, best first, and its null score.

    Each window proposes every pair of its n_best_size best start and end
    positions that is a valid answer there; with version_2_with_negative
    the null candidate competes too.
    """
    prelim_predictions = []
    null = _NullScore(1000000, 0, 0, 0)  # Larger than any real null score.
    for feature_index, feature in enumerate(features):
        result = unique_id_to_result[feature.unique_id]
        # Only word-piece positions compete for the n best: padding logits
        # depend on how far a batch was padded.
        num_tokens = len(feature.tokens)
        start_indexes = get_best_indexes(result.start_logits, n_best_size)
        end_indexes = get_best_indexes(result.end_logits, n_best_size)
        if version_2_with_negative:
            feature_null_score = result.start_logits[0] + result.end_logits[0]
            if feature_null_score < null.score:
                null = _NullScore(
                    feature_null_score, feature_index, result.start_logits[0], result.end_logits[0]
                )
        for start_index in start_indexes:
            for end_index in end_indexes:
                # Drop spans that leave the document part of the window, start at a
                # token better seen in another window, run backwards or are too long.
                if start_index >= num_tokens or end_index >= num_tokens:
                    continue
                if start_index not in feature.token_to_orig_map:
                    continue
                if end_index not in feature.token_to_orig_map:
                    continue
                if not feature.token_is_max_context.get(start_index, False):
                    continue
                if end_index < start_index:
                    continue
                if end_index - start_index + 1 > max_answer_length:
                    continue
                prelim_predictions.append(
                    _PrelimPrediction(
                        feature_index=feature_index,
                        start_index=start_index,
                        end_index=end_index,
                        start_logit=result.start_logits[start_index],
                        end_logit=result.end_logits[end_index],
                    )
                )

    if version_2_with_negative:
        prelim_predictions.append(
            _PrelimPrediction(
                feature_index=null.feature_index,
                start_index=0,
                end_index=0,
                start_logit=null.start_logit,
                end_logit=null.end_logit,
            )
        )
    # sorted() is stable, so equal scores keep their generation order.
    prelim_predictions = sorted(
        prelim_predictions, key=lambda x: x.start_logit + x.end_logit, reverse=True
    )
    return prelim_predictions, null


def write_predictions(
    all_examples,
    all_features,
    all_results,
    n_best_size,
    max_answer_length,
    do_lower_case,
    output_prediction_file,
    output_nbest_file,
    output_null_log_odds_file,
    version_2_with_negative,
    null_score_diff_threshold,
    verbose_logging,
):
    """Writes predictions.json, nbest_predictions.json and (v2) null_odds.json.

    predictions.json maps question id to answer text; for v2 it is "" when
    the null score minus the best non-null score exceeds
    null_score_diff_threshold, and null_odds.json holds that difference.
    Returns (all_predictions, all_nbest_json, scores_diff_json).
    """
    logging.info("Writing predictions to: %s", output_prediction_file)
    logging.info("Writing nbest to: %s", output_nbest_file)

    example_index_to_features = collections.defaultdict(list)
    for feature in all_features:
        example_index_to_features[feature.example_index].append(feature)
    unique_id_to_result = {result.unique_id: result for result in all_results}

    all_predictions = collections.OrderedDict()
    all_nbest_json = collections.OrderedDict()
    scores_diff_json = collections.OrderedDict()

    for example_index, example in enumerate(all_examples):
        nbest, score_null = _nbest_for_example(
            example,
            example_index_to_features[example_index],
            unique_id_to_result,
            n_best_size,
            max_answer_length,
            do_lower_case,
            version_2_with_negative,
            verbose_logging,
        )
        probs = compute_softmax([entry.start_logit + entry.end_logit for entry in nbest])
        best_non_null_entry = next((entry for entry in nbest if entry.text), None)

        nbest_json = []
        for entry, prob in zip(nbest, probs):
            output = collections.OrderedDict()
            output["text"] = entry.text
            output["probability"] = prob
            output["start_logit"] = entry.start_logit
            output["end_logit"] = entry.end_logit
            nbest_json.append(output)

        if not version_2_with_negative:
            all_predictions[example.qas_id] = nbest_json[0]["text"]
        elif best_non_null_entry is None:
            # No span survived the filters: the only candidate is "no answer".
            scores_diff_json[example.qas_id] = score_null
            all_predictions[example.qas_id] = ""
        else:
            score_diff = (
                score_null - best_non_null_entry.start_logit - best_non_null_entry.end_logit
            )
            scores_diff_json[example.qas_id] = score_diff
            if score_diff > null_score_diff_threshold:
                all_predictions[example.qas_id] = ""
            else:
                all_predictions[example.qas_id] = best_non_null_entry.text
        all_nbest_json[example.qas_id] = nbest_json

    _write_json_atomically(output_prediction_file, all_predictions)
    _write_json_atomically(output_nbest_file, all_nbest_json)
    if version_2_with_negative:
        _write_json_atomically(output_null_log_odds_file, scores_diff_json)
    return all_predictions, all_nbest_json, scores_diff_json


def _strip_spaces(text):
    """Returns (text without spaces, map from its char index to the index in `text`)."""
    ns_chars = []
    ns_to_s_map = collections.OrderedDict()
    for i, char in enumerate(text):
        if char == " ":
            continue
        ns_to_s_map[len(ns_chars)] = i
        ns_chars.append(char)
    return "".join(ns_chars), ns_to_s_map


def get_final_text(pred_text, orig_text, do_lower_case, verbose_logging):
    """Projects the normalised predicted text back onto the original words.

    pred_text comes from word pieces (lower-cased, accents stripped,
    punctuation split off); orig_text is the whole original words it lies
    in, e.g. pred "steve smith" in orig "Steve Smith's" gives "Steve Smith".
    orig_text is run through BasicTokenizer; if the two agree character for
    character once spaces are removed, the predicted span is mapped back.
    Whenever that fails, orig_text is returned unchanged (and, with
    `verbose_logging`, the reason logged).
    """
    tokenizer = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    tok_text = " ".join(tokenizer.tokenize(orig_text))

    start_position = tok_text.find(pred_text)
    if start_position == -1:
        if verbose_logging:
            logging.info("Unable to find text: '%s' in '%s'", pred_text, orig_text)
        return orig_text
    end_position = start_position + len(pred_text) - 1

    orig_ns_text, orig_ns_to_s_map = _strip_spaces(orig_text)
    tok_ns_text, tok_ns_to_s_map = _strip_spaces(tok_text)
    if len(orig_ns_text) != len(tok_ns_text):
        if verbose_logging:
            logging.info(
                "Length not equal after stripping spaces: '%s' vs '%s'",
                orig_ns_text,
                tok_ns_text,
            )
        return orig_text

    # Same length without spaces: assume the characters align one to one.
    tok_s_to_ns_map = {tok_index: i for i, tok_index in tok_ns_to_s_map.items()}

    orig_start_position = None
    if start_position in tok_s_to_ns_map:
        ns_start_position = tok_s_to_ns_map[start_position]
        if ns_start_position in orig_ns_to_s_map:
            orig_start_position = orig_ns_to_s_map[ns_start_position]
    if orig_start_position is None:
        if verbose_logging:
            logging.info("Couldn't map start position")
        return orig_text

    orig_end_position = None
    if end_position in tok_s_to_ns_map:
        ns_end_position = tok_s_to_ns_map[end_position]
        if ns_end_position in orig_ns_to_s_map:
            orig_end_position = orig_ns_to_s_map[ns_end_position]
    if orig_end_position is None:
        if verbose_logging:
            logging.info("Couldn't map end position")
        return orig_text

    return orig_text[orig_start_position : orig_end_position + 1]


def get_best_indexes(logits, n_best_size):
    """Returns the indexes of the n_best_size largest logits, best first (stable on ties)."""
    index_and_score = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
    return [index for index, _ in index_and_score[:n_best_size]]


def compute_softmax(scores):
    """Softmax of a list of python floats, computed in float64 (empty in, empty out)."""
    if not scores:
        return []
    max_score = max(scores)
    exp_scores = [math.exp(score - max_score) for score in scores]
    total_sum = 0.0
    for value in exp_scores:
        total_sum += value
    return [value / total_sum for value in exp_scores]
