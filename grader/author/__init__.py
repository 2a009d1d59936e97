"""Tools for the problem's author: audit of the suite, adding a case."""
