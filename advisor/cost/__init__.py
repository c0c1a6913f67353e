"""The cost model: plans and their validity, memory per GPU, communication, step time.
Pure functions; numpy arrays inside; one vectorised evaluation for a whole sweep."""
