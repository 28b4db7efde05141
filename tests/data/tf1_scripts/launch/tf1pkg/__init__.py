"""A package of TF 1.x code, run as `python -m tf1pkg.train` or `python -m tf1pkg`."""
