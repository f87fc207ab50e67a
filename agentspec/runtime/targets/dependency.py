"""The requirement a generated package names for agentspec itself.

agentspec's distribution is ``agentspec-rl`` (the import name and the command
stay ``agentspec``): the PyPI project called ``agentspec`` is someone else's,
and a package that depended on that name installed it. agentspec is not on PyPI,
so a bare name would not install anything in a fresh environment either: the
package names the place this agentspec was installed from, as pip recorded it
(PEP 610's ``direct_url.json``: the checkout's ``file://`` URL or the ``git+``
URL), so ``pip install PACKAGE`` alone installs the same project.
"""

from __future__ import annotations

import json
from importlib import metadata

__all__ = ["DISTRIBUTION", "agentspec_requirement"]

DISTRIBUTION = "agentspec-rl"


def agentspec_requirement(extras: tuple[str, ...] = ()) -> str:
    """``agentspec-rl[EXTRAS] @ URL`` where pip recorded where this install came from,
    else ``agentspec-rl[EXTRAS]>=VERSION`` (an index that serves it must be configured)."""
    name = DISTRIBUTION + (f"[{','.join(extras)}]" if extras else "")
    # every copy on the path: a build's `*.egg-info` in the working folder comes first
    # and has no record of where it was installed from
    installed = list(metadata.distributions(name=DISTRIBUTION))
    for dist in installed:
        url = _source_url(dist.read_text("direct_url.json"))
        if url:
            return f"{name} @ {url}"
    return f"{name}>={installed[0].version}" if installed else name


def _source_url(direct_url: str | None) -> str | None:
    """The URL pip can install the same source from, or None (an index install)."""
    if not direct_url:
        return None
    try:
        record = json.loads(direct_url)
    except ValueError:
        return None
    url = record.get("url") if isinstance(record, dict) else None
    if not isinstance(url, str):
        return None
    vcs = record.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        commit = vcs.get("commit_id")
        return f"{vcs['vcs']}+{url}" + (f"@{commit}" if isinstance(commit, str) else "")
    return url
