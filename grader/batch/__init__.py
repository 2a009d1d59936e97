"""A whole class, on one machine or many: runner, output folder, shards, merge, report."""
