"""A secret of no known format, as a program's session token would be."""

from __future__ import annotations

import random
import string

from chaincassette.entropy import looks_random

ALNUM = string.ascii_letters + string.digits


def session_token(n: int = 40) -> str:
    """A fresh token that reads as random (mixed case and digits): one the rule masks, drawn
    again when the draw is one of the few it reads as words."""
    while True:
        token = "".join(random.SystemRandom().choice(ALNUM) for _ in range(n))
        if looks_random(token):
            return token
