"""The runs a user names: the settings, the matrix, and case files.

Takes the command line's options or a case file (suites/cases/*.toml: [matrix], [crash],
[workload], [faults], [replay], [seed], [expect]); gives the matrix's cells (filesystem x mode x
workload) and runs them, throughput and power cuts, into a results file of JSON lines; a
case's fault plan and the kept state it replays; and what its [expect] table says that the
results do not show.

    settings      every setting of a crash run and a matrix cell, declared once
    matrix        the matrix runner: results as JSON lines, resumable
    cases         case files, validated (`load_case`), and their expectations
    faultcase     a case file's [faults] table and [[expect.faults]]
    replaycase    a case file's [replay] table: one kept state, rechecked
    seedtable     a case file's [seed] table: the seed's published figures
    keeprecord    keep a saved state's record for a [replay] case
"""
