"""``assay import``: answers a judge already wrote, matched to samples, read by the method's own reader and written
as a run.
"""
