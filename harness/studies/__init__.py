"""Studies that need no labels: the known-item study and the interval-coverage simulation."""
