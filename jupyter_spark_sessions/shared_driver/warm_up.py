"""The pre-warmed shared server's first query, run by its keeper in a process of its
own before notebooks come (``server/prewarm``): the keeper stays small, without
PySpark's Spark Connect client loaded for its whole life.

    JSS_WARM_UP_URL=sc://... python -m jupyter_spark_sessions.shared_driver.warm_up

The URL comes in the environment: the token is not for every local user's ``ps``.
"""

from __future__ import annotations

import os
import sys

from ..backends.connect import warm_up

URL_VARIABLE = "JSS_WARM_UP_URL"


def main() -> int:
    warm_up(os.environ[URL_VARIABLE])
    return 0


if __name__ == "__main__":
    sys.exit(main())
