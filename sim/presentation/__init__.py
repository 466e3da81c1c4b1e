"""What is committed and shown of a sweep: compact copies of finished sweeps to commit under
``results/`` (``compact``), opening a sweep's results and drawing them with their intervals
(``plots``: what the notebooks call), and tables as GitHub Markdown (``markdown``).

Presentation reads the sweep machinery (``sim.sweep``) and never a study (``sim.studies``):
it holds what any sweep is shown with, and a study draws and tabulates through it.
"""
