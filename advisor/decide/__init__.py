"""Decision logic beside the cost model: the question asked (objective, workload, limits), which plan each
model should use, the ranking, the reasons, and the command that runs the choice."""
