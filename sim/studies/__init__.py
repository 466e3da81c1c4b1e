"""The studies: each reads the results of its own sweeps or capacity grids (made by the sweep
machinery, ``sim.sweep``) and reports its claims — ``paper`` (the Llumnix paper's claims on a
``paper`` sweep), ``findings`` (the K-tier project's claims on ``k_study``), ``capacity_report``
(the K-tier capacity answer from ``k_capacity``, ``slo_floor`` and ``k_autoscale``) and
``k_map`` (which K conclusions survive the contract, the cluster size and the model's error).

A study imports the machinery and presentation (``sim.presentation``: figures, Markdown
tables), never another study: a helper two studies need lives in one of those, or in a
module here that is not a study. ``agreement`` is one: the rule grading a figure of
llumsim's against a published one, which the ``paper`` study applies.
``tests/test_architecture.py`` checks the direction.
"""
