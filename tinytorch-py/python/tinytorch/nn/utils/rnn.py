"""``torch.nn.utils.rnn.pad_sequence``: stack sequences of different lengths into one
padded tensor."""

from ... import _tinytorch as _C


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Tensors of shapes (L_i, *) padded with ``padding_value`` to the longest L: shape
    (L, B, *), or (B, L, *) with ``batch_first``; ``padding_side="left"`` pads in front."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            fill = _C.full((missing,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype,
                           device=s.device)
            s = _C.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return _C.stack(padded, 0 if batch_first else 1)
