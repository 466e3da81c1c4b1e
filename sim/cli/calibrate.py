"""``llumsim calibrate``: the A10 calibration report (``sim.hardware.calibration_report``),
with ``--device`` another GPU's validation (``sim.hardware.device_validation``), or with
``--engine vllm-v1`` vLLM V1 against published serving runs on a GPU
(``sim.bench.v1_serving``), as a table or one JSON document; exit status 1 unless the
report passes, 2 on bad input (an unknown device, an option out of range, a plot path that
cannot be written).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sim.hardware import calibration_plot, calibration_report
from sim.hardware.catalog import DEFAULT_DEVICE


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document instead")
    parser.add_argument(
        "--plot", type=Path, metavar="FILE", help="write predicted vs measured and light-batch decode (PNG)"
    )
    parser.add_argument("--max-batched-tokens", type=int, default=12800, help="activation reserve")
    parser.add_argument(
        "--device",
        default=DEFAULT_DEVICE,
        help=f"another GPU of the catalog: its published measurements instead of the A10 table (default {DEFAULT_DEVICE})",
    )
    parser.add_argument(
        "--engine",
        choices=("vllm-0.1.2", "vllm-v1"),
        default="vllm-0.1.2",
        help="vllm-v1: play published vLLM V1 serving runs on --device again and grade them ±15%% "
        "(default vllm-0.1.2: the artifact engine's calibration)",
    )
    parser.add_argument("--model", help="with --engine vllm-v1: only this model's runs (default: all)")


def run(args: argparse.Namespace) -> int:
    from sim.config import ConfigError
    from sim.files import check_output_file
    from sim.hardware.predictor_settings import MAX_TOKENS

    if not 1 <= args.max_batched_tokens <= MAX_TOKENS:  # bad input: exit 2, before any work
        raise ConfigError(f"--max-batched-tokens: must be in 1..{MAX_TOKENS} (the profiled range), got {args.max_batched_tokens}")
    if args.plot:
        check_output_file(args.plot, "--plot")
    if args.engine == "vllm-v1":
        return run_v1(args)
    if args.model:
        raise ConfigError("--model: selects published V1 runs; it needs --engine vllm-v1")
    if args.device != DEFAULT_DEVICE:
        return run_device(args)
    result = calibration_report.calibration(args.max_batched_tokens)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(calibration_report.format_table(result))
    if args.plot:
        calibration_plot.plot(result, args.plot)
    return 0 if calibration_report.passes(result) else 1


def run_device(args: argparse.Namespace) -> int:
    """``--device``: that GPU's validation rows (``device_validation``); exit 1 unless each
    check is within its bound."""
    from sim.config import ConfigError
    from sim.hardware import device_validation
    from sim.hardware.catalog import UnknownHardwareError

    if args.plot:
        raise ConfigError("--plot: draws the A10 table; it has no --device form")
    try:
        result = device_validation.validation(args.device)
    except UnknownHardwareError as error:  # bad input (exit 2), not a verdict (exit 1)
        raise ConfigError(f"--device: {error}") from None
    print(json.dumps(result, indent=2) if args.json else device_validation.format_validation(result))
    return 0 if device_validation.passes(result) else 1


def run_v1(args: argparse.Namespace) -> int:
    """``--engine vllm-v1``: the device's published V1 runs played again (``sim.bench.v1_serving``);
    exit 1 unless each check row is within ±15%."""
    from sim.bench import v1_serving
    from sim.config import ConfigError
    from sim.hardware.catalog import LAYOUTS

    if args.plot:
        raise ConfigError("--plot: draws the A10 table; it has no --engine vllm-v1 form")
    # bad input (exit 2), not a verdict (exit 1)
    devices = sorted({layout.device for layout in LAYOUTS})
    if args.device not in devices:
        raise ConfigError(f"--device: unknown device {args.device!r}; known devices: {', '.join(devices)}")
    models = sorted({layout.model for layout in LAYOUTS if layout.device == args.device})
    if args.model is not None and args.model not in models:
        raise ConfigError(f"--model: {args.model!r} is not a model of {args.device} (its models: {', '.join(models)})")
    result = v1_serving.validation(args.device, args.model)
    print(json.dumps(result, indent=2) if args.json else v1_serving.format_validation(result))
    return 0 if v1_serving.passes(result) else 1
