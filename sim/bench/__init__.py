"""Micro-experiments that reproduce the paper's measurements inside the simulator."""
