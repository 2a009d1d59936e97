"""One module per audience: each command's options beside the small handler that runs it."""
