"""A release's datasets built one partition (or chunk) at a time, the global rules, the release's
row order and its files written one file slice at a time; `ReleaseRequest` is what it hands on."""
