"""Model backends behind one interface (see `base`)."""
