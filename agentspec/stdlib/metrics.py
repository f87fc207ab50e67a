"""Answer metrics with the SQuAD / HotpotQA normalisation.

`normalize_answer` follows the official SQuAD v1.1 evaluation script: lower
case, drop punctuation, drop the articles a/an/the, collapse whitespace.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from agentspec.stdlib.library import CallSignature, register

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: Any) -> str:
    text = "" if text is None else str(text).lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: Any, truth: Any) -> float:
    """1.0 when the normalised answers are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(truth))


def f1(prediction: Any, truth: Any) -> float:
    """Token-level F1 of the normalised answers (SQuAD).

    As in the HotpotQA script, yes/no/noanswer must match exactly.
    """
    pred, gold = normalize_answer(prediction), normalize_answer(truth)
    special = {"yes", "no", "noanswer"}
    if (pred in special or gold in special) and pred != gold:
        return 0.0
    pred_tokens, gold_tokens = pred.split(), gold.split()
    if not pred_tokens or not gold_tokens:  # SQuAD's convention: 1 when both are empty
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_at_all(retrieved: Iterable[Any], relevant: Iterable[Any]) -> float:
    """F1 between a retrieved set and the relevant set (set-level precision/recall)."""
    got, want = set(retrieved), set(relevant)
    hits = len(got & want)
    if hits == 0:
        return 0.0
    precision, recall = hits / len(got), hits / len(want)
    return 2 * precision * recall / (precision + recall)


def recall(retrieved: Iterable[Any], relevant: Iterable[Any]) -> float:
    """Share of the relevant set that was retrieved (1.0 when nothing is relevant)."""
    got, want = set(retrieved), set(relevant)
    if not want:
        return 1.0
    return len(got & want) / len(want)


def numeric_match(prediction: Any, truth: Any, tolerance: float = 1e-6) -> float:
    """1.0 when two answers denote the same number, else 0.0.

    Both sides go through `number`, so a GSM8K reference answer (`... #### 1,234`)
    compares equal to a model's `1234`, `1,234.0` or `$1234`. A missing number on
    either side is a mismatch. The tolerance is relative to the truth,
    |prediction − truth| ≤ tolerance · |truth|, at every size: a probability of
    0.005 is not 0.001 whatever the tolerance below 4, and only 0 matches 0.
    """
    from agentspec.stdlib.text import number

    pred, gold = number(prediction), number(truth)
    if pred is None or gold is None:
        return 0.0
    return float(pred == gold or abs(pred - gold) <= tolerance * abs(gold))


# The metrics as `impl: stdlib:NAME` functions (factories over a spec's `config`).


@register("numeric_match", CallSignature(("any", "any"), "float"))
def _numeric_match_function(tolerance: float = 1e-6) -> Callable[[Any, Any], float]:
    """`numeric_match(prediction, truth) -> float`: 1.0 when both denote the same
    number within a relative `tolerance` (|prediction − truth| ≤ tolerance · |truth|, so
    only 0 matches 0), read by `number` (GSM8K `#### N` aware), else 0.0."""
    return lambda prediction, truth: numeric_match(prediction, truth, tolerance)


@register("f1_at_all", CallSignature(("list[any]", "list[any]"), "float"))
def _f1_at_all_function() -> Callable[[Iterable[Any], Iterable[Any]], float]:
    """`f1_at_all(predicted, relevant) -> float`: the F1 of two sets of ids."""
    return f1_at_all


@register("recall", CallSignature(("list[any]", "list[any]"), "float"))
def _recall_function() -> Callable[[Iterable[Any], Iterable[Any]], float]:
    """`recall(retrieved, relevant) -> float`: the share of `relevant` in `retrieved`
    (1.0 when nothing is relevant)."""
    return recall
