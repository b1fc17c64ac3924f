"""Generated workloads (B3/ACE-style): every bounded sequence of file operations on a few
fixed names, the state each completed persistence point makes durable (a model oracle of
rules, each with its source), and the check of a recovered tree against it. Pure code: no guest.

`tree`: the model tree; `ops`: the operation table; `space`: enumeration, ids, sampling;
`program`: a workload as a guest shell script; `oracle`: what each point owes; `judge`: the check."""
