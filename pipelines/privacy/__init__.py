"""Privacy building blocks: redaction of released text, keyed pseudonyms, the opt-out registry,
and subject lookup. Pure functions over strings and Polars frames; no Dagster imports.

- `redact`: `Redactor` replaces e-mail addresses, phone numbers, IPs, URLs carrying secrets, bearer
  tokens, money amounts and configured organization names with typed placeholders.
- `pseudonyms`: `Pseudonymizer` (HMAC-SHA256 per subject kind) and id replacement inside text.
- `optouts`: `load_optouts` reads `consent/optouts.jsonl`; `withhold` drops opted-out subjects
  from silver tables and reports counts only.
- `subjects`: `subject_footprint` / `subject_rows`: every row about a subject across tables.
"""
