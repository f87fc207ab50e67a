"""Serving a compiled spec to other trainers: the episode session and what speaks it.

- :mod:`.spec`: :class:`ServedSpec`, a compiled spec with its task tokenizer and data;
- :mod:`.session`: :class:`EpisodeSession` / :class:`SyncEpisodeSession`, an episode
  driven one action at a time by its caller;
- :mod:`.openenv_server`: the OpenEnv environment server (`agentspec serve --openenv`);
- :mod:`.limits`: what keeps one of its clients from locking the others out (idle
  timeout, message and buffer sizes, the shared token).

Nothing here is imported by ``import agentspec``; the OpenEnv server imports
``openenv`` (the ``[openenv]`` extra) only when it is built.
"""
