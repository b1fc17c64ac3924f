"""The lab: filesystems, modes and workloads, run in guests, recorded, cut and judged.

Takes a crash spec or a matrix cell (filesystem, mode, workload, models, seed); gives
verdicts per crash state (recording, checking, classifying) and throughput per mode, as
result records, with an artifact for every state that is not clean.
"""
