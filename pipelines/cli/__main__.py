"""`python -m pipelines.cli …` is `turnlake …`."""

import sys

from pipelines.cli.entry import main

sys.exit(main())
