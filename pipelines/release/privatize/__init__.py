"""What a release may contain: subject ids pseudonymized, texts redacted, a ledger of
replacements; per partition, the privatized rows kept and their ledger."""
