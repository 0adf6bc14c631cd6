"""The release as stored: its files and manifest, local or remote stores (fetch, verify, publish,
list), rewriting releases after a forget, and the content-addressed cache of per-partition work."""
