"""Experiments that reproduce a paper's own analyses (run each as ``python -m
re2_tf.experiments.<name>``): :mod:`re2_tf.experiments.lcs`, Match-SRNN's LCS simulation."""
