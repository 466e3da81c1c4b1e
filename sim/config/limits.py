"""Every size limit on what llumsim reads, in one place.

A file or command line nobody here wrote can ask for anything: a grid of a billion cells, a
million seeds, a YAML alias tree that expands to gigabytes, a name longer than a file
system allows. Each is refused before anything runs, with ``llumsim: error: …`` naming the
file and key, instead of growing memory until the machine gives out. The limits are far
above anything the shipped configs and grids use (largest: ``k_study``, 7,200 runs; the
paper grid, ~15 aliases and a few hundred YAML nodes), and low enough that refusing or
expanding within them takes seconds and little memory.
"""

from __future__ import annotations

from typing import Final

# YAML files (configs, grids, a grid's base configs) and --set values
MAX_YAML_BYTES: Final = 1 << 20  # 1 MiB: the largest shipped file is 3 KB
MAX_YAML_NODES: Final = 100_000  # scalars, lists and mappings after aliases are expanded
MAX_YAML_ALIASES: Final = 1_000  # uses of ``*anchor`` in one document
MAX_YAML_DEPTH: Final = 64  # nesting of lists and mappings (the schema's deepest is 4)

# grids and capacity searches
MAX_SEEDS: Final = 1_000  # seeds per cell (``seeds:``, ``capacity --seeds``)
MAX_GRID_RUNS: Final = 20_000  # cells x seeds in one grid: ~3x k_study; ~5 s, ~200 MB to expand

# names that become folders (a run's or a grid's ``name``): well under the 255 bytes a
# file system allows for one path component, with room for ``.tmp-<pid>-`` in front
MAX_NAME_CHARS: Final = 200
