"""Entry point of ``python -m icecore``."""

from __future__ import annotations

import sys

from icecore.cli import main

sys.exit(main())
