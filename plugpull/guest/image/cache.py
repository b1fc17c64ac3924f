"""The image cache's bookkeeping: which cached images a live process uses, and pruning the
others, oldest use first."""

import os
import shutil
from pathlib import Path

from plugpull.paths import cache_dir
from plugpull.locks import held, take_shared

_HELD: dict[Path, int] = {}


def hold(image_dir: Path) -> None:
    """Mark an image as in use by this process, for as long as it lives: a shared lock on its
    `in-use` file, which `prune_cache` (another checkout building another image) respects.
    The file's mtime is the image's last use."""
    if image_dir in _HELD:
        return
    marker = image_dir / "in-use"
    fd = take_shared(marker)
    os.utime(marker)
    _HELD[image_dir] = fd


def in_use(image_dir: Path) -> bool:
    return held(image_dir / "in-use")


def prune_cache(root: Path, keep: int) -> list[Path]:
    """Remove all but the `keep` most recently used images, never one a live process uses.
    Called under the cache's lock."""
    def last_use(manifest: Path) -> int:
        marker = manifest.parent / "in-use"
        return (marker if marker.exists() else manifest).stat().st_mtime_ns

    manifests = sorted(cached_images(root), key=last_use, reverse=True)
    removed = [m.parent for m in manifests[keep:] if not in_use(m.parent)]
    for d in removed:
        shutil.rmtree(d, ignore_errors=True)
    return removed


def cached_images(root: Path | None = None) -> list[Path]:
    root = root or cache_dir() / "images"
    return sorted(p for p in root.glob("*/manifest.json")) if root.is_dir() else []
