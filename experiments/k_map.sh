#!/usr/bin/env bash
# Issue 29's K map in one command: the three capacity grids (k_map: 16 instances, every
# contract; k_map_bands: the model-error bands; k_map_scale: 4, 8, 32 instances) into OUT/main,
# OUT/bands and OUT/scale, then the conclusions table and figures (python -m sim.studies.k_map).
# Every run is stored as it finishes: an interrupted map resumes where it stopped.
# Usage: experiments/k_map.sh [OUT] [llumsim capacity flags: --jobs 2, --backend ray ...]
#   (run from the repository root, with the virtual environment active)
set -euo pipefail
out=${1:-results/k_map}
shift || true
for part in main bands scale; do
  grid=k_map
  [ "$part" = main ] || grid=k_map_$part
  python -m sim capacity --grid "experiments/grids/$grid.yaml" --out "$out/$part" "$@"
done
python -m sim.studies.k_map "$out"
