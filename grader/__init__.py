"""Grading harness for the sinusoidal position encodings exercise."""

__version__ = "0.1.0"
