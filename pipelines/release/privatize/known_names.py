"""Where a release partition keeps the names its episodes know: its built entry frame KNOWN_NAMES
(`known_names` of the partition's silver rows), read back when the partition is privatized. The
redaction itself is pipelines/privacy/known_name_redaction.py, shared with the decision tools."""

KNOWN_NAMES = "_known_names"  # a partition's built entry frame: its episodes' `known_names`
