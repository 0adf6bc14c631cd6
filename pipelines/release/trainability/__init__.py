"""What a trainer can rely on, checked on a release's own files, with a memo by the files' bytes."""
