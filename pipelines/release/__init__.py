"""Versioned, immutable training-set releases (DESIGN §5): layout, writing, verification."""
