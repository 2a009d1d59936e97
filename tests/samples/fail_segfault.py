import ctypes


def sinusoidal_positions(positions, d_model):
    return ctypes.c_char.from_address(8).value
