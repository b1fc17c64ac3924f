"""Kernels built from source: `plugpull kernels build SPEC`, booted as `--kernel build:NAME`.

    request = BuildRequest(parse_build_source("debian:7.3"), [Path("fix.patch")], None, None)
    result = build_kernel(request)          # fetched, patched, configured, built once
    BuildStore(root).find(result.name)      # a KernelSource, for build_image / prepare_rig

`buildspec` parses SPEC and names; `debsrc` fetches Debian's source through plugpull's own apt;
`worktree` keeps the tree a build compiles (the user's untouched); `patches` checks and
applies the patches (or reverts them); `config` makes and checks the config (allnoconfig,
kvm_guest.config, vmconfig/kernel.config); `estimate` counts what a cold build compiles, for
its ETA; `make` runs make (through ccache) with progress; `preflight` checks tools and disk; `store` is the cache; `builder`
puts them together.
"""

from plugpull.kernels.build.builder import BuildRequest, BuildResult, build_kernel
from plugpull.kernels.build.buildspec import is_build, parse_build, parse_build_source
from plugpull.kernels.build.store import BuildStore

__all__ = ["BuildRequest", "BuildResult", "BuildStore", "build_kernel", "is_build", "parse_build",
           "parse_build_source"]
