"""Crash states checked by Dask workers (`--cluster`): each record is shipped to each worker
once, content-addressed (`bundle`); a task names its states by the record's digest, the
model, the cuts and the seed (`tasks`); the worker builds them from its cached record and
checks them on checker guests of its own (`worker`); the coordinator puts the observations
back in order (`coordinator`). `serve` binds the scheduler and the worker, loopback unless TLS."""
