"""Simulation speed: llumsim vs Vidur's own simulator on the same requests, and a 64-instance run.

    python benchmarks/throughput.py [--quick] [--repeats N] [--no-vidur] [--no-scale]
                                    [--profile] [--no-vidur-bare] [--both-engines]

(a) llumsim: ShareGPT V3 first turns, Poisson at ``RATE`` req/s, 16 LLaMA-7B instances on
    A10, INFaaS++ — 10,000 requests (``--quick``: 2,000).
(b) Vidur 0.0.26's simulator (``vidur.main`` through ``benchmarks/vidur_baseline.py``, which
    fixes its restart bug) on exactly those requests: the workload (a) samples is written as
    a Vidur trace-replay CSV (same arrival instants and lengths); 16 replicas, its LOR global
    and vLLM replica schedulers, the same A10 profiles and predictions (``sim.hardware.
    vidur_offline``), our KV capacity in blocks, 12,800 batched tokens, batch cap 256, 1%
    watermark. Once with its metrics store on (it records request latencies, as we do) and,
    unless ``--quick`` or ``--no-vidur-bare``, once with it off (its event loop alone).
(c) llumsim: 64 instances, 500 req/s, 100,000 requests (``--quick``: 20,000), ShareGPT
    lengths resampled with replacement.
(d) the quickstart (``experiments/configs/quickstart.yaml``) and (f) the conversations with
    the prefix cache (``experiments/configs/sessions.yaml``: its ledger is written in Python,
    a subclass of the compiled one): simulated seconds per wall second and time per batch;
    (g) the quickstart on the vLLM V1 engine (``cluster.engine: vllm-v1``: its batch former is
    written in Python, a subclass of the compiled one), beside (d).

llumsim runs on whichever engine is installed (printed first): pure Python, or the compiled
one (``llumsim native build``; ``LLUMSIM_PURE=1`` measures pure Python beside a build);
``--both-engines`` runs (a) on both in the same run.

Every run is a fresh process; its peak RSS is measured from outside (``os.wait4``), so
runs do not pollute each other. The timed part is the event loop only: process start,
imports, predictor load (a cold fit if the cache is empty), workload set-up and output
post-processing are reported separately. "req/wall-s" = requests / event-loop seconds.
``--profile`` also runs (a) under cProfile (in its own process) and prints the top entries.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = ROOT / "benchmarks" / "vidur_baseline.py"
sys.path.insert(0, str(ROOT / "benchmarks"))

RATE = 7.5  # req/s on 16 instances: the middle of the paper's ShareGPT rates (Fig. 11)
TRACE = "traces/sharegpt/sharegpt_v3_first_turn.csv"
QUICKSTART = ROOT / "experiments" / "configs" / "quickstart.yaml"
SESSIONS = ROOT / "experiments" / "configs" / "sessions.yaml"


def base_config(
    requests: int, instances: int, rate: float, scheduler: str = "infaas++", shaped: bool = True
) -> dict:
    """ShareGPT requests (shaped to the paper's Table 1 unless ``shaped`` is false: the V3
    first turns as shipped), Poisson arrivals, 16 LLaMA-7B instances by default."""
    workload = {
        "source": "lengths",
        "trace": TRACE,
        "num_requests": requests,
        "arrival": {"process": "poisson", "rate": rate},
    }
    if shaped:
        workload["shape"] = {"preset": "sharegpt-gpt4"}
    return {
        "name": "throughput",
        "seed": 0,
        "cluster": {"model": "llama-7b", "device": "a10", "instances": instances},
        "workload": workload,
        "scheduler": {"name": scheduler},
        "output": {"plots": False, "progress": False},
    }


def workload_digest(workload) -> str:
    digest = hashlib.sha256()
    for array in (workload.arrival, workload.prompt_tokens, workload.output_tokens, workload.tier):
        digest.update(array.tobytes())
    return digest.hexdigest()[:16]


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


# ---------------------------------------------------------------------------- child: llumsim
def child_ours(config_json: str, profile: str | None) -> int:
    """One llumsim run; prints a JSON report on its last line."""
    started = time.perf_counter()
    from sim.config import load_config
    from sim.engine import Simulation
    from sim.metrics import request_table, summarize
    from sim.metrics.tables import cluster_table

    config = load_config(None, base=json.loads(config_json))
    model_started = time.perf_counter()
    simulation = Simulation(config)  # workload + replica model (warm: cached tables)
    setup_s = time.perf_counter() - model_started
    rss_before_loop = rss_mib()
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        result = simulation.run()
        profiler.disable()
        profiler.dump_stats(profile)
    else:
        result = simulation.run()
    post_started = time.perf_counter()
    requests = request_table(result)
    summary = summarize(result, requests, cluster_table(result))
    post_s = time.perf_counter() - post_started
    table_hash = hashlib.sha256(requests.to_csv(index=False).encode()).hexdigest()[:16]
    report = {
        "startup_s": model_started - started,
        "setup_s": setup_s,
        "loop_s": result.wall_seconds,
        "post_s": post_s,
        "requests": len(result.requests),
        "batches": result.batches,
        "events": next(simulation.env._eid),  # simpy events scheduled (ids are a counter)
        "preemptions": int(requests["preemptions"].sum()),
        "simulated_s": result.end_time,
        "p99_prefill_s": summary["latency"]["prefill_latency"]["p99"],
        "p50_prefill_s": summary["latency"]["prefill_latency"]["p50"],
        "workload": workload_digest(simulation.workload),
        "table_sha256": table_hash,
        "rss_before_loop_mib": rss_before_loop,
    }
    print(json.dumps(report), flush=True)
    return 0


# ---------------------------------------------------------------------------- parent
def run_child(command: list[str], env: dict | None = None) -> dict:
    """Run ``command``; return its stdout, exit status, wall time and peak RSS (own rusage)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            command, stdout=out, stderr=err, cwd=ROOT, env={**os.environ, **(env or {})}
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0:
        sys.stderr.write(stdout[-3000:] + stderr[-3000:])
        raise SystemExit(f"child failed ({process.returncode}): {' '.join(command[:4])} …")
    return {
        "stdout": stdout,
        "process_wall_s": wall,
        "peak_rss_mib": usage.ru_maxrss / 1024,  # Linux: KiB
    }


def run_ours(config: dict, profile: str | None = None, env: dict | None = None) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--child-ours", json.dumps(config)]
    if profile:
        command += ["--child-profile", profile]
    child = run_child(command, env)
    report = json.loads(child["stdout"].strip().splitlines()[-1])
    return {**report, **{k: v for k, v in child.items() if k != "stdout"}}


def run_vidur(flags: list[str], env: dict) -> dict:
    from vidur_baseline import parse_report

    child = run_child([sys.executable, str(LAUNCHER), *flags], env)
    report = parse_report(child["stdout"])
    return {**report, **{k: v for k, v in child.items() if k != "stdout"}}


def median_run(runs: list[dict]) -> dict:
    """The run with the median event-loop time, with the largest peak RSS of all."""
    ordered = sorted(runs, key=lambda r: r["loop_s"])
    chosen = dict(ordered[len(ordered) // 2])
    chosen["peak_rss_mib"] = max(r["peak_rss_mib"] for r in runs)
    chosen["loop_s_all"] = [round(r["loop_s"], 3) for r in runs]
    return chosen


def fmt_row(label: str, run: dict) -> str:
    rps = run["requests"] / run["loop_s"]
    batches = max(run["batches"], 1)
    return (
        f"{label:<28} {run['requests']:>8,} {run['batches']:>10,} {run['events'] / batches:>7.2f} "
        f"{run['loop_s']:>8.2f} {rps:>11,.0f} {run['loop_s'] / batches * 1e6:>9.1f} "
        f"{run['peak_rss_mib']:>9.0f} {run['startup_s'] + run.get('setup_s', 0):>8.2f} "
        f"{run['process_wall_s']:>7.1f} {run['p99_prefill_s']:>9.2f}"
    )


HEADER = (
    f"{'simulator':<28} {'requests':>8} {'batches':>10} {'ev/bat':>7} {'loop s':>8} "
    f"{'req/wall-s':>11} {'us/batch':>9} {'peak MiB':>9} {'start s':>8} {'proc s':>7} "
    f"{'P99 pf s':>9}"
)


def print_profile(path: str, top: int = 25) -> None:
    for key in ("tottime", "cumulative"):
        stream = io.StringIO()
        stats = pstats.Stats(path, stream=stream)
        stats.sort_stats(key).print_stats(top)
        text = stream.getvalue()
        start = text.find("   ncalls")
        print(f"\n-- cProfile of (a), top {top} by {key} --")
        print(text[start:].rstrip())


def shipped_config(path: Path = QUICKSTART) -> dict:
    from sim.config.loader import read_yaml

    data = read_yaml(path)
    data["output"] = {"plots": False, "progress": False}
    return data


def idle_curve(hours=(0.25, 0.5, 1.0)) -> list[tuple[float, dict]]:
    """64 instances, 1 req/s for 0.25, 0.5 and 1 simulated hour: a cost that grew with
    simulated time x instances would make ms per request climb with the hours."""
    curve = []
    for span in hours:
        config = base_config(int(3600 * span), 64, 1.0, "llumnix")
        curve.append((span, run_ours(config)))
    return curve


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 / 20,000 requests")
    parser.add_argument("--repeats", type=int, default=3, help="llumsim runs per setting (median)")
    parser.add_argument("--rate", type=float, default=RATE, help="req/s for (a) and (b)")
    parser.add_argument("--no-vidur", action="store_true", help="skip (b)")
    parser.add_argument("--no-scale", action="store_true", help="skip (c)")
    parser.add_argument("--no-idle", action="store_true", help="skip (e), the lightly loaded curve")
    parser.add_argument("--profile", action="store_true", help="also cProfile (a)")
    parser.add_argument(
        "--both-engines", action="store_true",
        help="with a current build, also run (a) on pure Python (LLUMSIM_PURE=1), in the same run",
    )
    parser.add_argument(
        "--vidur-bare",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also run Vidur with its metrics store off, its event loop alone "
        "(default: on, off with --quick)",
    )
    parser.add_argument("--child-ours", help=argparse.SUPPRESS)
    parser.add_argument("--child-profile", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_ours:
        return child_ours(args.child_ours, args.child_profile)

    from sim.config import load_config
    from sim import native
    from sim.hardware.catalog import find_layout
    from sim.hardware.replica_model import cache_entry
    from sim.hardware.vidur_offline import prepare_vidur_offline
    from sim.workload import build_workload
    from vidur_baseline import workload_flags, write_trace

    n_small, n_large = (2_000, 20_000) if args.quick else (10_000, 100_000)
    print(f"$ {' '.join([os.path.relpath(sys.executable, ROOT), *sys.argv])}")
    print(f"{date.today()}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    # every child process imports the same build (LLUMSIM_PURE=1 in the environment: pure Python)
    print(f"llumsim engine: {native.status()}")

    config_a = base_config(n_small, 16, args.rate)
    config_a_llumnix = base_config(n_small, 16, args.rate, "llumnix")
    config_c = base_config(n_large, 64, 500.0, shaped=False)
    rows: list[tuple[str, dict]] = []

    with tempfile.TemporaryDirectory(prefix="llumsim-bench-") as tmp:
        # one-off start-up: the predictor cache (cold fit only if it is empty) and Vidur's seed
        layout = find_layout("llama-7b", "a10", None)
        cold = not (cache_entry(layout) / "tables.npz").exists()
        started = time.perf_counter()
        setup = prepare_vidur_offline(Path(tmp) / "vidur")
        prepare_s = time.perf_counter() - started
        print(
            f"predictor cache: {'cold fit' if cold else 'warm'}; preparing it and Vidur's "
            f"offline seed took {prepare_s:.1f} s (not in any timing below)"
        )

        # (a) llumsim
        cfg = load_config(None, base=config_a)
        workload = build_workload(cfg.workload, cfg.seed, ROOT)
        runs = [run_ours(config_a) for _ in range(args.repeats)]
        ours = median_run(runs)
        assert ours["workload"] == workload_digest(workload), "child saw another workload"
        hashes = {r["table_sha256"] for r in runs}
        rows.append(("llumsim 16 inst, INFaaS++", ours))
        print(
            f"(a) llumsim: loop s per repeat {ours['loop_s_all']}; per-request table "
            f"{'identical across repeats' if len(hashes) == 1 else 'DIFFERS: ' + str(hashes)} "
            f"(sha256 {ours['table_sha256']}); preemptions {ours['preemptions']:,}; "
            f"simulated {ours['simulated_s']:.0f} s; P50/P99 prefill "
            f"{ours['p50_prefill_s']:.2f}/{ours['p99_prefill_s']:.2f} s; post-processing "
            f"{ours['post_s']:.2f} s; RSS before the loop {ours['rss_before_loop_mib']:.0f} MiB"
        )

        llumnix = median_run([run_ours(config_a_llumnix) for _ in range(args.repeats)])
        rows.append(("llumsim 16 inst, Llumnix", llumnix))
        if args.both_engines:
            if native.status() != "compiled":
                parser.error(f"--both-engines needs a current build (the engine is {native.status()})")
            pure = {"LLUMSIM_PURE": "1"}
            for label, config in (("INFaaS++", config_a), ("Llumnix", config_a_llumnix)):
                runs = [run_ours(config, env=pure) for _ in range(args.repeats)]
                rows.append((f"  pure Python, {label}", median_run(runs)))

        # (b) Vidur on the same requests
        vidur = bare = None
        if not args.no_vidur:
            trace = Path(tmp) / "workload_vidur.csv"
            max_tokens = write_trace(workload, trace)
            cluster = cfg.cluster
            flags = setup.args + workload_flags(
                trace,
                max_tokens,
                replicas=cluster.instances,
                max_batched_tokens=cluster.max_batched_tokens,
                max_batch_size=cluster.max_batch_size,
                watermark_fraction=cluster.watermark_fraction,
            )
            vidur = run_vidur(flags, setup.env)
            rows.append(("Vidur 16 repl, LOR + vLLM", vidur))
            print(
                f"(b) Vidur: {vidur['restarts']:,} restarts (preemptions); simulated "
                f"{vidur['simulated_s']:.0f} s; output writing {vidur['write_s']:.2f} s; RSS "
                f"before the loop {vidur['rss_before_loop_mib']:.0f} MiB"
            )
            print(
                "    command: "
                + " ".join(f"{k}={v}" for k, v in setup.env.items())
                + f" {os.path.relpath(sys.executable, ROOT)} {LAUNCHER.relative_to(ROOT)} "
                + " ".join(flags)
            )
            if args.vidur_bare if args.vidur_bare is not None else not args.quick:
                bare = run_vidur(flags + ["--no-metrics_config_write_metrics"], setup.env)
                bare["p99_prefill_s"] = float("nan")
                rows.append(("Vidur, metrics store off", bare))

        # (c) llumsim at scale
        if not args.no_scale:
            scale = median_run([run_ours(config_c) for _ in range(max(1, args.repeats // 3))])
            rows.append(("llumsim 64 inst, 500 req/s", scale))
            print(
                f"(c) llumsim 64 x 500: preemptions {scale['preemptions']:,}; simulated "
                f"{scale['simulated_s']:.0f} s; P50/P99 prefill {scale['p50_prefill_s']:.0f}/"
                f"{scale['p99_prefill_s']:.0f} s; RSS before the loop "
                f"{scale['rss_before_loop_mib']:.0f} MiB"
            )

        # (d) the quickstart: simulated seconds per wall second
        quick = shipped_config()
        realtime = median_run([run_ours(quick) for _ in range(args.repeats)])
        # (f) conversations closed-loop with the prefix cache
        sessions = median_run([run_ours(shipped_config(SESSIONS)) for _ in range(args.repeats)])
        # (g) the quickstart on vLLM V1's engine
        v1 = shipped_config()
        v1["cluster"] = {**v1["cluster"], "engine": "vllm-v1"}
        realtime_v1 = median_run([run_ours(v1) for _ in range(args.repeats)])

        # (e) a lightly loaded cluster over longer and longer runs
        idle = [] if args.no_idle else idle_curve()

        print()
        print(HEADER)
        for label, run in rows:
            print(fmt_row(label, run))
        print()
        print(f"issue-12 figures ({native.status()} engine):")
        for label, run in rows[:2]:
            print(f"  {label}: {run['loop_s'] / run['batches'] * 1e6:.1f} us per batch (target <= 4)")
        # the headline is the fair ratio: Vidur's event loop without its metrics store (our
        # loop keeps no per-batch metrics either); the ratio with the store follows it
        for label, baseline in (("metrics store off", bare), ("metrics store on", vidur)):
            if baseline is None:
                continue
            for name, run in rows[:2]:
                ratio = (run["requests"] / run["loop_s"]) / (baseline["requests"] / baseline["loop_s"])
                target = " (target >= 50x)" if baseline is bare else ""
                print(
                    f"  ratio {name} / Vidur ({label}), simulated requests per wall-second: "
                    f"{ratio:.1f}x{target}; per batch: {run['loop_s'] / run['batches'] * 1e6:.1f} vs "
                    f"{baseline['loop_s'] / baseline['batches'] * 1e6:.1f} us"
                )
        print(
            f"  quickstart: {realtime['simulated_s']:.0f} simulated s in {realtime['loop_s']:.2f} s "
            f"of event loop = {realtime['simulated_s'] / realtime['loop_s']:.0f}x real time (target >= 1000x)"
        )
        for engine, run in (("vllm-0.1.2", realtime), ("vllm-v1", realtime_v1)):
            print(
                f"  quickstart on the {engine} engine: {run['loop_s'] / run['batches'] * 1e6:.1f} us per batch "
                f"({run['batches']:,} batches, {run['simulated_s'] / run['loop_s']:.0f}x real time)"
            )
        print(
            f"  sessions (prefix cache, conversations): {sessions['simulated_s']:.0f} simulated s in "
            f"{sessions['loop_s']:.2f} s of event loop = {sessions['simulated_s'] / sessions['loop_s']:.0f}x real "
            f"time; {sessions['loop_s'] / sessions['batches'] * 1e6:.1f} us per batch"
        )
        if not args.no_scale:
            print(f"  64 instances x 500 req/s x {n_large:,} requests: event loop {scale['loop_s']:.1f} s (target <= 8)")
        if idle:
            print("  64 instances at 1 req/s, lightly loaded: wall time against requests and simulated time")
            print(f"    {'simulated h':>11} {'requests':>9} {'loop s':>7} {'ms/request':>10} {'ms/simulated min':>16}")
            for hours, run in idle:
                print(
                    f"    {hours:>11.2f} {run['requests']:>9,} {run['loop_s']:>7.2f} "
                    f"{run['loop_s'] / run['requests'] * 1e3:>10.2f} {run['loop_s'] / (hours * 60) * 1e3:>16.1f}"
                )
        print(
            "loop s: event loop only; req/wall-s = requests / loop s. ev/bat: events per batch. "
            "start s: process launch to loop start (imports, config, workload, warm predictor "
            "load, Vidur's trace read). proc s: process launch to exit. peak MiB: the process's "
            "max RSS. P99 pf s: P99 arrival-to-first-token."
        )

        if args.profile:
            path = str(Path(tmp) / "ours.prof")
            run_ours(config_a, profile=path)
            print_profile(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
