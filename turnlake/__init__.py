"""turnlake: raw human–AI interaction logs → validated, versioned training sets.

This package is the public face of the engine (`pipelines`): `import turnlake` gives the Python
API of `pipelines.api` (build, status, release, verify, pull, query, load_release, …) and its
result and error classes. See README.md, "Python API".
"""

from pipelines.api import *  # the facade re-exports the API, nothing else
from pipelines.api import __all__ as __all__
from pipelines.api import __getattr__ as __getattr__  # LeakageError, UntrainableRelease
