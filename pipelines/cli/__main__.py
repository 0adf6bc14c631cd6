"""`python -m pipelines.cli …` is `turnlake …`."""

import sys

from pipelines.cli.main import main

sys.exit(main())
