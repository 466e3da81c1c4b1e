"""Run Vidur's own simulator (``vidur.main``) offline on our profiles and predictions.

Vidur 0.0.26 reads profiles, and first tries ready-made predictions, only through
``huggingface_hub.snapshot_download``. With ``HF_HUB_OFFLINE=1`` that call resolves a
dataset from a local HF-hub cache layout (``datasets--org--name/refs/main`` naming a
snapshot folder). ``prepare_vidur_offline`` seeds such a layout under Vidur's predictor
cache dir with:

* our compute and network profiles (with the ``config.json`` Vidur checks), and
* the predictions our cold fit produced with Vidur's own predictor, under the repo ids
  Vidur derives from the same settings, so Vidur loads them instead of training.

Vidur's process must also know our SKUs and model configs, which are registered by
importing ``sim.hardware``; so the command runs this module, which does that and then hands
over to ``vidur.main``. Scheduler and workload flags are the caller's to add.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import sim.hardware.predictor_settings as settings
from sim.hardware.catalog import DEFAULT_DEVICE, Layout, find_layout
from sim.hardware.replica_model import VIDUR_SUBDIR, cache_entry, load_replica_model


@dataclass(frozen=True)
class VidurOfflineSetup:
    args: list[str]  # vidur.main flags for hardware, KV cache, predictor and output
    env: dict[str, str]  # to add to the environment of Vidur's process
    vidur_cache_dir: Path  # the seeded predictor cache

    @property
    def command(self) -> list[str]:
        """Run Vidur's simulator; append scheduler and workload flags."""
        return [sys.executable, "-m", "sim.hardware.vidur_offline", *self.args]


def _seed_dataset(hub_cache: Path, repo_id: str, files: list[Path]) -> None:
    """Lay ``files`` out as the cached snapshot of dataset ``repo_id`` (revision main)."""
    from huggingface_hub.file_download import repo_folder_name

    digest = hashlib.sha1()
    for path in sorted(files):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    revision = digest.hexdigest()
    storage = hub_cache / repo_folder_name(repo_id=repo_id, repo_type="dataset")
    snapshot = storage / "snapshots" / revision
    snapshot.mkdir(parents=True, exist_ok=True)
    for path in files:
        shutil.copyfile(path, snapshot / path.name)
    (storage / "refs").mkdir(exist_ok=True)
    (storage / "refs" / "main").write_text(revision)


def _seed(layout: Layout, vidur_cache: Path, fitted_cache: Path) -> None:
    from vidur.execution_time_predictor.sklearn_execution_time_predictor import ModelType

    from sim.hardware.vidur_predictor import LocalProfilePredictor

    # Reloads the pickled forests and predictions of the cold fit: no training here.
    predictor = LocalProfilePredictor(layout, str(fitted_cache))
    config = predictor._config
    _seed_dataset(
        vidur_cache / "profiling_data" / "compute",
        config.model_profiling_dataset,
        sorted(layout.compute_dir.iterdir()),
    )
    _seed_dataset(
        vidur_cache / "profiling_data" / "network",
        config.network_profiling_dataset,
        sorted(layout.network_dir.iterdir()),
    )
    for kind, repo_id in (
        ("compute", predictor._get_compute_prediction_repo_id()),
        ("network", predictor._get_network_prediction_repo_id()),
    ):
        model_type = ModelType.COMPUTE if kind == "compute" else ModelType.NETWORK
        predictions = fitted_cache / "predictions" / predictor._get_hash(model_type)
        files = sorted(predictions.glob("*.csv.xz")) if predictions.exists() else []
        _seed_dataset(vidur_cache / "hf_predictions" / kind, repo_id, files)


def prepare_vidur_offline(
    output_dir: str | Path,
    model: str = "llama-7b",
    device: str = DEFAULT_DEVICE,
    tensor_parallel: int | None = None,
    *,
    gpu_memory_utilization: float = 0.9,
    max_batched_tokens: int = 12800,
    cache_dir: str | None = None,
) -> VidurOfflineSetup:
    """Seed ``output_dir`` so Vidur's simulator runs offline on our profiles; return how.

    The KV capacity is ours (``--cache_config_num_blocks``); the block size is the
    profiled one (16), which Vidur's attention-profile filter and prediction hash require.
    Vidur's request generator ``max_tokens`` still matters: it sizes Vidur's blocks per
    sequence and (for its Orca scheduler) the batch size as planner KV tokens // max_tokens;
    its vLLM scheduler is capped by ``--vllm_scheduler_config_batch_size_cap`` instead. Set
    ``max_tokens`` to the workload's real maximum.
    """
    layout = find_layout(model, device, tensor_parallel)
    replica = load_replica_model(
        model,
        device,
        layout.tensor_parallel,
        block_size=settings.PROFILE_BLOCK_SIZE,
        gpu_memory_utilization=gpu_memory_utilization,
        max_batched_tokens=max_batched_tokens,
        cache_dir=cache_dir,
    )
    output = Path(output_dir)
    vidur_cache = output / "vidur_cache"
    _seed(layout, vidur_cache, cache_entry(layout, cache_dir) / VIDUR_SUBDIR)
    prefix = "--random_forrest_execution_time_predictor_config_"
    config = settings.predictor_config(layout, str(vidur_cache))
    args = {
        "--replica_config_model_name": layout.vidur_model,
        "--replica_config_device": layout.device,
        "--replica_config_network_device": layout.node,
        "--replica_config_tensor_parallel_size": layout.tensor_parallel,
        "--replica_config_num_pipeline_stages": 1,
        "--replica_config_gpu_memory_utilization": gpu_memory_utilization,
        "--cache_config_block_size": settings.PROFILE_BLOCK_SIZE,
        "--cache_config_num_blocks": replica.kv_capacity_blocks,
        "--execution_time_predictor_config_type": "random_forrest",
        "--metrics_config_output_dir": output / "simulator_output",
    }
    for name in (
        "model_profiling_dataset",
        "network_profiling_dataset",
        "prediction_hf_org",
        "prediction_hf_collection",
        "prediction_max_tokens_per_request",
        "prediction_max_prefill_chunk_size",
        "prediction_max_batch_size",
        "k_fold_cv_splits",
        "num_training_job_threads",
        "cache_dir",
    ):
        args[prefix + name] = getattr(config, name)
    for name, values in (
        ("num_estimators", config.num_estimators),
        ("max_depth", config.max_depth),
        ("min_samples_split", config.min_samples_split),
    ):
        args[prefix + name] = " ".join(map(str, values))
    flags = []
    for flag, value in args.items():
        flags += [flag, *str(value).split(" ")]
    # Vidur's plots need kaleido's Chrome; they are not wanted here anyway.
    flags += ["--no-metrics_config_store_plots", "--no-metrics_config_enable_chrome_trace"]
    return VidurOfflineSetup(flags, {"HF_HUB_OFFLINE": "1"}, vidur_cache)


def main() -> None:
    """``python -m sim.hardware.vidur_offline <vidur.main flags>``: Vidur with our SKUs known."""
    from vidur.main import main as vidur_main

    vidur_main()


if __name__ == "__main__":
    main()
