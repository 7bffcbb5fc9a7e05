"""Shipped artifacts as data files only; the code that reads each lives with its method under assay.methods."""
