"""`grader serve`: the practice page on 127.0.0.1, its application and its HTTP side."""
