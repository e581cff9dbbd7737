"""`python -m grpo_kit` is `grpo`."""

import sys

from .cli import main

sys.exit(main())
