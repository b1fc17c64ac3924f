"""A report that could not be written (a full disk, a read-only directory): nothing of it was
left (`files.staged_directory`), and the error names the report's directory and the file
the system refused, as a harness failure (exit 3): the input was good."""

from pathlib import Path

from plugpull.errors import InfraError


def unwritten(out_dir: Path, error: OSError) -> InfraError:
    where = f" ({error.filename})" if error.filename else ""
    return InfraError(f"the report {out_dir} was not written, nothing of it is left: {error.strerror or error}{where}")
