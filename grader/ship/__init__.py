"""What leaves the course: the Gradescope bundle and autograder, the learner kit."""
