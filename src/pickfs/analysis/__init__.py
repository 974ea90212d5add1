"""A stored run turned into its answer, once (pure): between the results store and the report.

Imports only the model, the statistics and the filesystem facts. `run.analyse` analyses a stored run once
(`run.build_views`: every workload's levels, weather, intervals, notes and answer); each way of measuring has one
judge: `race.judge` for a race (the engine's race calls it while it runs), `latency.latency_choice` at a fixed
rate and for a capacity search, `whole.choice` for runs measured before the race (one at a time, or whole runs
alternated in rounds). The report only formats what these return; the search reads them too.
"""
