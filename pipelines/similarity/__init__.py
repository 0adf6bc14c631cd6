"""Text similarity shared by the release and the split rules: normalized words and their hashed
n-grams in Polars (words.py), MinHash near-duplicates (minhash.py), evaluation sets read
(eval_sets.py) and the decontamination match (decontaminate.py)."""
