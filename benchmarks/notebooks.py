"""How long each notebook takes to open the committed results and draw its figures, as a
newcomer would run it: only the files a clone of this checkout holds under results/ are
copied into a temporary folder, and each notebook runs there in a fresh kernel.

    PYTHONPATH=. .venv/bin/python benchmarks/notebooks.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.sweep_support import execute_notebook, shipped_results  # noqa: E402

# the committed study each notebook opens (the default of its STUDY variable)
OPENS = {"k_study": "k_study", "paper": "paper", "migration": "paper", "stress": "stress"}


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        results = Path(folder)
        studies = shipped_results(results)
        sizes = {s: sum(f.stat().st_size for f in (results / s).rglob("*") if f.is_file()) for s in studies}
        print("committed studies:", ", ".join(f"{s} ({sizes[s] / 1e6:.2f} MB)" for s in studies) or "none")
        for name, study in OPENS.items():
            if study not in studies:
                print(f"{name}.ipynb: no committed {study} results (needs its full sweep)")
                continue
            start = time.perf_counter()
            execute_notebook(name, results)
            print(f"{name}.ipynb: {time.perf_counter() - start:.1f} s against the committed {study}")
    print("command: PYTHONPATH=. .venv/bin/python benchmarks/notebooks.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
