import sys

from plugpull.cli import main

sys.exit(main())
