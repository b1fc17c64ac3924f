"""A case file written where a test reads it."""

from pathlib import Path


def write_case(folder: Path, text: str) -> Path:
    """FOLDER/case.toml holding text; its path."""
    path = folder / "case.toml"
    path.write_text(text)
    return path
