"""The guest image: a kernel and an initramfs built from the host's Debian packages.

`build` (GuestImage, KernelSource, build_image: the recipe planned, keyed by content, built
once), `cache` (which cached images a live process holds; pruning the others), `cpio` (the
initramfs writer), `kernel` (the kernel unpacked for a direct PVH boot), `modules` (the
recipe's kernel modules by rule). Nothing here boots a guest.
"""
