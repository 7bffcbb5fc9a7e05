"""Runs made without calling a judge: ``assay import`` (answers a judge already wrote, matched to samples, read by
the method's own reader) and ``assay jury`` (several judges' runs combined per unit), each written as a run.
"""
