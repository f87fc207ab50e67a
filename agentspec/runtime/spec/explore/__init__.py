"""`agentspec explore`: a bounded search for loopholes in a spec (docs/explore.md).

`space` (what an agent could write), `policy` (the random-action policy of
`run --policy random`), `driver` (episodes through the spec's own loop),
`search` (the strategies), `detect` (the findings), `explorer` (the entry
point, `explore`) and `report` (diagnostics and witnesses as `tests:` entries).
"""
