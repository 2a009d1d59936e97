"""What a learner hands in, read without running it."""
