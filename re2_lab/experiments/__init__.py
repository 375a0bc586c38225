"""Experiments that reproduce a paper's own analyses (run each as ``python -m
re2_lab.experiments.<name>``): :mod:`re2_lab.experiments.lcs`, Match-SRNN's LCS simulation."""
