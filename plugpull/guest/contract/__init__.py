"""What every backend gives and takes, whatever runs the guest.

`backend` (the Guest and Backend protocols, and the logic shared over `run`: uploading a file,
waiting for a hot-plugged disk), `config` (the frozen specs: machine, disks, bus,
accelerator), `channel` (the host end of the command channel and the ack stream). It knows
the image (a guest boots one), never a backend.
"""
