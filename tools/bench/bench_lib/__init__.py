"""The BinLog benchmark: figures measured side by side with the baselines they are judged against.

``bench.py`` is the command; each module here is one family of measurements
(writes, reads, Spark, follower latency, recovery) or one part of the
machinery (timing, logs, reports, the worker processes).
"""
