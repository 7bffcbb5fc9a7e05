"""Running a method over a dataset: the run session, the local and Ray executors, the run store, artifact builds and
the estimate with its stand-in judge.
"""
