"""What a release is a function of (its inputs digest), which release LATEST names, and the code
that made it: what decides whether a build makes a new release at all."""
