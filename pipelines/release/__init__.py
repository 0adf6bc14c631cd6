"""Versioned, immutable training-set releases (DESIGN §5), one subpackage a stage, each importing
only the ones before it here: store/ (a release's files, the release stores, the per-partition work
cache), plan/ (what a release is a function of), privatize/, build/ (datasets by partition, release
order, file slices), trainability/, card/; assemble.py runs them and write.py writes the result."""
