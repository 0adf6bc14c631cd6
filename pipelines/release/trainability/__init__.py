"""What a trainer can rely on, checked on a release's own files once, before it is published, and
recorded in its manifest with the bytes checked."""
