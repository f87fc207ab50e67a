"""Make a Hugging Face dataset id loadable offline from local files.

A cluster node without network access cannot download `openai/gsm8k`, but
often has the same rows as files. `seed_hf_cache` builds the `datasets`
cache entry that `datasets.load_dataset(ID, CONFIG)` falls back to when the
Hub is unreachable (`HF_DATASETS_OFFLINE=1` / `HF_HUB_OFFLINE=1`), so a spec
can keep its `source: hf:openai/gsm8k` (with `params: {name: main}`) and
run there unchanged:

```python
seed_hf_cache("openai/gsm8k", "main",
              {"train": "data/gsm8k/train.jsonl", "test": "data/gsm8k/test.jsonl"})
```

Files may be JSONL (`.jsonl`/`.json`) or parquet; nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path


def seed_hf_cache(
    dataset_id: str,
    config: str,
    files: Mapping[str, str | Path],
    cache_dir: str | Path | None = None,
) -> Path:
    """Prepare `files` ({split: path}) as the cached dataset `dataset_id`/`config`.

    Returns the cache entry's folder. `cache_dir` defaults to the `datasets`
    cache (`HF_DATASETS_CACHE`).
    """
    import datasets
    from datasets.data_files import DataFilesDict

    suffixes = {Path(p).suffix for p in files.values()}
    if suffixes <= {".jsonl", ".json"}:
        from datasets.packaged_modules.json.json import Json as Builder
    elif suffixes == {".parquet"}:
        from datasets.packaged_modules.parquet.parquet import Parquet as Builder
    else:
        raise ValueError(f"seed_hf_cache: use JSONL or parquet files, not {sorted(suffixes)}")
    root = Path(cache_dir or datasets.config.HF_DATASETS_CACHE).expanduser()
    namespace, _, name = dataset_id.rpartition("/")
    folder_name = f"{namespace}___{name}" if namespace else name
    data_files = DataFilesDict.from_local_or_remote(
        {split: [str(Path(path).resolve())] for split, path in files.items()}
    )
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".seed-", dir=root))
    try:
        builder = Builder(
            cache_dir=str(staging), dataset_name=name, config_name=config, data_files=data_files
        )
        builder.download_and_prepare()
        # The layout the offline fallback reads: NAME/CONFIG/VERSION/HASH/.
        target = root / folder_name / config / str(builder.info.version or "0.0.0") / "local"
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(builder.cache_dir, target)
        os.utime(target)  # the most recent entry wins
        return target
    finally:
        shutil.rmtree(staging, ignore_errors=True)
