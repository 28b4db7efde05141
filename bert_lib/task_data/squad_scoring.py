"""Official SQuAD scoring: exact match and F1 by the v1.1 and v2.0 evaluation scripts' rules."""

import collections
import re
import string

from absl import logging

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text):
    """Lower-cases, drops punctuation and the articles a/an/the, collapses whitespace."""
    text = text.lower()
    text = "".join(char for char in text if char not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _answer_tokens(text):
    return normalize_answer(text).split() if text else []


def compute_exact(a_gold, a_pred):
    """1 if the normalised texts are equal, else 0."""
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred, version_2=True):
    """Bag-of-tokens F1 between two normalised answers.

    With the v2.0 rule an empty side scores 1 only if both are empty; the
    v1.1 rule scores any pair without a common token 0.
    """
    gold_toks = _answer_tokens(a_gold)
    pred_toks = _answer_tokens(a_pred)
    if version_2 and (not gold_toks or not pred_toks):
        return int(gold_toks == pred_toks)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = num_same / len(pred_toks)
    recall = num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def gold_answers(input_data):
    """Returns {question id: [gold answer texts]} in file order, or None without answers."""
    golds = collections.OrderedDict()
    any_answer = False
    for entry in input_data["data"]:
        for paragraph in entry["paragraphs"]:
            for qa in paragraph["qas"]:
                answers = qa.get("answers")
                if not isinstance(answers, list):
                    return None
                texts = [a.get("text", "") for a in answers if isinstance(a, dict)]
                any_answer = any_answer or bool(texts) or "is_impossible" in qa
                golds[qa["id"]] = texts
    return golds if any_answer else None


def _find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    """The null-odds threshold maximising the score, as the v2.0 script finds it."""
    num_no_ans = sum(1 for qid in qid_to_has_ans if not qid_to_has_ans[qid])
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if preds[qid] else 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def squad_v1_scores(golds, predictions):
    """Official SQuAD v1.1 metrics: {"exact_match", "f1"} in percent.

    golds maps question id to its gold texts; a question without a
    prediction scores 0 but still counts. Questions without any gold answer
    (SQuAD 2.0 data scored without --version_2_with_negative) are left out,
    with a warning, since the v1.1 rules cannot score them.
    """
    unanswerable = [qid for qid, gold_texts in golds.items() if not gold_texts]
    if unanswerable:
        logging.warning(
            "%d questions have no gold answer and are not scored (SQuAD 2.0 data needs "
            "--version_2_with_negative), e.g. %s",
            len(unanswerable),
            unanswerable[0],
        )
        golds = {qid: texts for qid, texts in golds.items() if texts}
    exact_match = 0.0
    f1 = 0.0
    for qid, gold_texts in golds.items():
        if qid not in predictions:
            logging.warning("Unanswered question %s will receive score 0.", qid)
            continue
        prediction = predictions[qid]
        exact_match += max(
            float(normalize_answer(prediction) == normalize_answer(g)) for g in gold_texts
        )
        f1 += max(compute_f1(g, prediction, version_2=False) for g in gold_texts)
    total = len(golds)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


def squad_v2_scores(golds, predictions, na_probs=None):
    """Official SQuAD v2.0 metrics, in percent.

    exact/f1/total over all questions, HasAns_* and NoAns_* over the
    answerable and unanswerable ones, and with `na_probs` (question id ->
    null odds) best_exact, best_exact_thresh, best_f1, best_f1_thresh: the
    scores had the null threshold been set optimally. A question is
    unanswerable when its list of gold answers is empty.
    """
    qid_to_has_ans = {qid: bool(texts) for qid, texts in golds.items()}
    exact_raw = {}
    f1_raw = {}
    for qid, texts in golds.items():
        gold_texts = [t for t in texts if normalize_answer(t)] or [""]
        if qid not in predictions:
            logging.warning("Missing prediction for %s", qid)
            continue
        a_pred = predictions[qid]
        exact_raw[qid] = max(compute_exact(a, a_pred) for a in gold_texts)
        f1_raw[qid] = max(compute_f1(a, a_pred) for a in gold_texts)

    def summary(qids=None):
        if qids is None:
            qids = list(exact_raw)
        total = len(qids)
        return {
            "exact": 100.0 * sum(exact_raw[q] for q in qids) / total,
            "f1": 100.0 * sum(f1_raw[q] for q in qids) / total,
            "total": total,
        }

    result = summary()
    has_ans = [qid for qid, has in qid_to_has_ans.items() if has]
    no_ans = [qid for qid, has in qid_to_has_ans.items() if not has]
    for prefix, qids in (("HasAns", has_ans), ("NoAns", no_ans)):
        if qids:
            for key, value in summary(qids).items():
                result[f"{prefix}_{key}"] = value
    if na_probs is not None:
        best_exact, exact_thresh = _find_best_thresh(
            predictions, exact_raw, na_probs, qid_to_has_ans
        )
        best_f1, f1_thresh = _find_best_thresh(predictions, f1_raw, na_probs, qid_to_has_ans)
        result["best_exact"] = best_exact
        result["best_exact_thresh"] = exact_thresh
        result["best_f1"] = best_f1
        result["best_f1_thresh"] = f1_thresh
    return result
