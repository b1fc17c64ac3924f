"""The power-cut run: record a workload up to a cut, build crash states, judge them.

Takes a `CrashSpec` (filesystem, mode, workload, power-loss models, states, seed, trigger,
stack) and a rig; gives a `CrashRun` result (the verdicts per state, per model), with an
artifact for every state that is not clean, which `replay` rebuilds and rechecks.

    spec        the run as the user names it (`CrashSpec`) and as it runs (`CrashPlan`)
    record      the workload on the test bed, recorded: base image + write log + stamped acks
    judge       states built from a record, checked in checker guests, classified
    artifacts   a state that is not clean saved with its recording, and read back
    crashrun    the engine: record, judge, save results and artifacts; `replay`

Where power is cut is chosen in `powerloss.cuts`.
"""
