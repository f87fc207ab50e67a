"""The samples of a compiled spec that each command plays: training and held-out
splits, carved one way for `train`, `eval`, both backends and every served split."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

__all__ = [
    "eval_split_name",
    "evaluation_samples",
    "held_out_note",
    "held_out_split",
    "hold_out_last",
    "no_data",
    "sample_ids",
]


def sample_ids(samples: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(s.get("id", i)) for i, s in enumerate(samples)]


def held_out_split(
    module: ModuleType, eval_samples: int, train_limit: int | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Training samples and held-out evaluation samples (what `train` and `eval` use).

    The held-out set is the spec's `eval_split`, a generator's `test` split, or
    else the last `eval_samples` samples of the data (removed from training); data of
    no more than `eval_samples` samples is held out half (`held_out_note` says so:
    the last `eval_samples` would leave one sample to train on), and data of fewer
    than two samples is a DataError. `train_limit`: the caller needs no more training samples than that (evaluation
    only builds the task tokenizer from them), so a held-out split of its own spares
    loading all of them. A spec without `data` has no samples: a DataError says so.
    """
    if module.DATA_SOURCE is None:
        raise no_data(module)
    eval_split = eval_split_name(module)
    if eval_split is not None:
        train_samples = module.load_samples(limit=train_limit)
        return train_samples, module.load_samples(split=eval_split, limit=eval_samples)
    samples = module.load_samples()
    if len(samples) < 2:
        from agentspec.stdlib.data import DataError

        raise DataError(
            f"spec {module.SPEC_NAME!r}: its data holds {len(samples)} sample(s) and no eval"
            " split, and training and evaluation need one sample to learn from and one held"
            " out: add samples, or an `eval_split`"
        )
    return hold_out_last(samples, eval_samples)


def hold_out_last(
    samples: list[dict[str, Any]], eval_samples: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Data without an eval split, split as `train` and `eval` split it: the last
    `eval_samples` samples held out, or half of data of no more than `eval_samples`
    (the last `eval_samples` would leave one sample to train on). A single sample has
    nothing to hold out: it is all training (`held_out_split` refuses such data; a served
    spec plays it)."""
    held = eval_samples if len(samples) > eval_samples else len(samples) // 2
    if held == 0:
        return list(samples), []
    return samples[:-held], samples[-held:]


def held_out_note(module: ModuleType, total: int, eval_samples: int) -> str:
    """What `held_out_split` did when the data is too small to hold out `eval_samples`
    and train on the rest ("" otherwise)."""
    if eval_split_name(module) is not None or total > eval_samples:
        return ""
    return (
        f"the spec's data holds {total} samples, no more than training.eval_samples"
        f" ({eval_samples}): half of them ({total // 2}) are held out for evaluation and"
        f" {total - total // 2} trained on; add samples or an `eval_split` for a larger"
        " held-out set"
    )


def no_data(module: ModuleType) -> Exception:
    """The DataError of a command that plays a spec's samples when the spec has none."""
    from agentspec.stdlib.data import no_data as spec_without_data

    return spec_without_data(module.SPEC_NAME)


def evaluation_samples(
    module: ModuleType, episodes: int, held_out: int, train_limit: int | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """What `agentspec eval` plays: up to `episodes` held-out samples, the training
    samples (for the task tokenizer), and a note when fewer than `episodes` are played.

    With an eval split (or a generator's `test` split) every sample of it is held out,
    so `episodes` of it are played. Otherwise the held-out samples are the last
    `held_out` (`training.eval_samples` of the run) — those training never saw — and
    `eval` never reaches past them into what was trained on.
    """
    if eval_split_name(module) is not None:
        train_samples, samples = held_out_split(module, episodes, train_limit)
        return train_samples, samples, ""
    train_samples, samples = held_out_split(module, held_out)
    note = held_out_note(module, len(train_samples) + len(samples), held_out)
    if not note and episodes > len(samples):
        note = (
            f"the spec's data has no eval split, so training held out its last "
            f"{len(samples)} samples (`training.eval_samples`) and trained on the rest; "
            f"evaluating on those {len(samples)} (not -n's {episodes})"
        )
    return train_samples, samples[:episodes], note


def eval_split_name(module: ModuleType) -> str | None:
    """The split held out for evaluation when the data has one of its own: the spec's
    `eval_split`, or a generator's `test`; None when the held-out samples are the last of
    the data (`hold_out_last`)."""
    if module.EVAL_SPLIT:
        return str(module.EVAL_SPLIT)
    source = module.DATA_SOURCE or ""
    return "test" if source.startswith("generator:") else None
