# Raises with a message that is not ASCII: run shows it, on any terminal, in any locale.
def sinusoidal_positions(positions, d_model):
    raise ValueError(f"d_model={d_model} : l'encodage « sinusoïdal » n'est pas écrit ✗")
