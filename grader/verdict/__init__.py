"""One answer becomes one verdict a learner may see: judging, diagnoses, the closed vocabulary."""
