"""plugpull: pull the plug on a virtual machine mid-write and show what survived."""

import logging

__version__ = "0.1.0"

# Step lines are INFO records even where the CLI did not set logging up: under pytest, which
# shows them beside a failing test as it showed the stderr lines they replace.
logging.getLogger(__name__).setLevel(logging.INFO)
