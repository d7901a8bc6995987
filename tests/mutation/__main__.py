"""``python -m tests.mutation``: see :mod:`tests.mutation.runner`."""

import sys

from tests.mutation.runner import main

sys.exit(main())
