"""No function of core/ or integrations/ rated D or worse by radon (``make lint``).

A block of cyclomatic complexity over 20 is where a change breaks what nobody tests; the
rule keeps every function readable in one sitting.
"""

from __future__ import annotations

import sys
from pathlib import Path

from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parent.parent
WORST_RANK = "C"


def main() -> int:
    problems = []
    for folder in ("core", "integrations"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for block in cc_visit(path.read_text()):
                rank = cc_rank(block.complexity)
                if rank > WORST_RANK:
                    where = f"{path.relative_to(ROOT)}:{block.lineno}"
                    problems.append(f"{where}: {block.name} rated {rank} ({block.complexity})")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
