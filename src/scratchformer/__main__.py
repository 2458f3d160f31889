import sys

from scratchformer.cli import main

sys.exit(main())
