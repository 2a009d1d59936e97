"""The parent side of running untrusted code: walls, processes, limits, the result channel."""
