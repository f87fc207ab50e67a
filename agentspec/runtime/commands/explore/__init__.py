"""`agentspec explore`: a bounded search for loopholes in a spec (docs/explore.md).

`space` (what an agent could write), `policy` (the random-action policy of
`run --policy random`), `driver` (episodes through the spec's own loop),
`reading` (what the spec's checks, guards and effects say), `answers` (answers
built from the checks, and rules generalised from winning episodes), `probe`
(the guard probe), `search` (the strategies), `detect` (the findings, their
evidence and coverage), `explorer` (the entry point, `explore`) and `report`
(diagnostics and witnesses as `tests:` entries).
"""
