"""Crash states checked by Dask workers (`--cluster`): each record is shipped to each worker
once, content-addressed (`bundle`); a task names its states by the record's digest, the
model, the cuts and the seed (`crash_task`); the worker builds them from its cached record and
checks them on checker guests of its own (`worker`); the coordinator puts the observations
back in order (`crash_coordinator`). A hunt's chunks go out alike (`hunt_coordinator`) and run
on the workers' kept guests (`hunt_task`); both coordinators wait for workers and name the
lost ones alike (`lost`). `serve` binds the scheduler and the worker, loopback unless TLS."""
