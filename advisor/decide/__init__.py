"""Decision logic beside the cost model: the question asked (objective, workload, limits), which plan each
model should use, the ranking, the reasons, and the command that runs the choice. Each command (`advisor/commands/`)
parses its flags and calls one function here, which returns a typed result for `advisor/report/` to write; nothing
here imports `report` or `commands`."""
