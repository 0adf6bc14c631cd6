"""What a release says about itself: the dataset card and its metadata, every column's meaning,
release profiles, and the diff from the previous release (its changelog)."""
