"""Experiments: orchestration over many trials, above the runner and below the API.

`plan.py` turns requests into TrialSpecs, `execute.py` runs them as one stored run,
`devices.py` chooses and checks devices; `sweep.py`, `max_batch.py`, `lr_find.py`,
`scaling.py`, `recommend.py` and `calibrate.py` are the strategies built on them.
Modules here import the runner and the layers below it, never the API or the CLI.
"""
