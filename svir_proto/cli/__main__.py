"""``python -m svir_proto.cli``: the ``svir`` command."""

from __future__ import annotations

import sys

from . import main

sys.exit(main())
