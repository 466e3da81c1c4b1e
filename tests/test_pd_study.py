"""The prefill/decode study (``sim.studies.pd``) on the smoke grids: the ratio table, its best
split, the interference table, the figure and the README block."""

from __future__ import annotations

import pandas as pd


def test_the_study_marks_one_best_split_per_shape_and_contract_and_writes_the_readme_block(smoke_results, tmp_path):
    import shutil

    from sim.studies import pd as study

    ratio = tmp_path / "ratio"
    shutil.copytree(smoke_results("pd_smoke"), ratio)
    interference = smoke_results("pd_interference_smoke")
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{study.README_BEGIN}\nold\n{study.README_END}\nafter\n")
    assert study.main([str(ratio), str(interference), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert "old" not in text and text.startswith("before\n") and text.endswith("after\n")
    assert (ratio / "pd_ratio.png").stat().st_size > 0
    table = study.ratio_table(pd.read_parquet(ratio / "index.parquet"))
    assert len(table) == 2 and table["best_split"].sum() == 1  # colocated is never the "best split"
    assert table.loc[table["best_split"], "layout"].tolist() == ["P4:D12/llumnix"]  # the only split
    assert table.set_index("layout")["scheme"].to_dict() == {"colocated-infaas++": "colocated-infaas++", "P4:D12/llumnix": "llumnix"}
    rows = study.interference_table(pd.read_parquet(interference / "index.parquet"))
    assert len(rows) == 4 and (rows["seeds"] == 1).all()
    # the decode instances of a split never wait behind a prefill they did not need to redo;
    # colocated instances do at every load
    split = rows[rows["layout"] == "P4:D12/llumnix"]
    colocated = rows[rows["layout"] == "colocated-infaas++"]
    assert (colocated["stall_ms"] > 0).all() and (split["stall_ms"] < colocated["stall_ms"].to_numpy()).all()
    assert "| PD, llumnix hand-off | **" in text  # its only split is its best
    assert "| colocated-infaas++ |  | " in text


def test_the_study_refuses_a_folder_that_is_not_its_kind(tmp_path, capsys):
    from sim.studies import pd as study

    assert study.main([str(tmp_path), str(tmp_path)]) == 2
    assert "no capacity_grid.json, so not llumsim capacity --grid experiments/grids/pd.yaml's results" in capsys.readouterr().err
