"""plugpull: pull the plug on a virtual machine mid-write and show what survived."""

__version__ = "0.1.0"
