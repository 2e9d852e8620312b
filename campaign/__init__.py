"""Campaigns: many runs within a time budget, failures re-run once, the night compared with the last one.

`python -m harness campaign CAMPAIGN.yaml [--budget 60m] [--seed N]` (docs/campaigns.md):

- `config`: the campaign file in, a validated `Campaign` out (a SpecError naming the file and key).
- `matrix`: a scenario × a grid of settings, each cell's expectation a rule over its settings.
- `plan`: the runs, each a `Case` that loads its spec when it runs; seeds and the order from the campaign seed.
- `runner`: each case run the way `harness run` runs one (`harness.scenario.run_specs`, or the one passed in), within the
  budget, a failure run again once; `records`: each attempt judged from its verdict, each case's
  outcome (PASS, FLAKE, FAIL, REGRESSION, INCONCLUSIVE, SKIPPED).
- `lake`: the `campaigns` table of the results lake (pyarrow, no Spark) and the runs' ingest.
- `changes`: what changed since the previous campaign of the same name.
- `flakes`: each scenario × configuration's outcomes over the last campaigns of the name and its flake rate, against
  the file's `flake_rate` threshold (`python -m campaign.flakes`).
- `outputs`, `page`: campaign.json, junit.xml, summary.md and index.html in results/campaigns/<timestamp>/.
- `command`: `python -m harness campaign` from the plan to the lake.
- `shards`: `--shard I/N`, the plan dealt to N shards by expected run time; `merge`: `python -m harness campaign merge`,
  the shards of one plan joined into one campaign.
"""
