"""The text of ``PROVENANCE.md``, the note shipped next to the A10 profiles.

Kept apart from ``build_profiles`` (which fills it in) so the fitting code reads as code.
"""

TEMPLATE = """# Provenance of the A10 profiles

**These are not measurements.** No A10 was available. Every time in these files is the
output of the GA102 performance model in `sim/hardware/perf_model.py`, whose constants were
fitted to the end-to-end A10 timings of the Llumnix artifact (Figure 10, in
`sim/hardware/data/{measurements_csv}`), to the decode slowdown the Llumnix paper
reports in its Figure 4, and to Vidur's measured A40 (GA102) times of the token operators at
decode batches of 1–128 (`sim/hardware/data/{linear_layers_csv}`). Regenerate with

    python -m sim.hardware.build_profiles

(deterministic; it rewrites this note, `{fit_json}` and every profile file).

## Method
1. Per operator, in Vidur's operator vocabulary: kernel cost + a smooth maximum (p-norm,
   p = {roofline_sharpness:g}) of FLOPs / (125 TFLOP/s × efficiency) and bytes moved /
   (600 GB/s × efficiency). Element-wise operators and the GEMMs of at most
   {skinny_tokens} tokens (cuBLAS's skinny-matrix kernels) stream at `memory_efficiency`, wider
   GEMMs (its tiled kernels) at `tiled_memory_efficiency`; decode attention (vLLM's PagedAttention, a different kernel) at
   `decode_attention_efficiency`, scaled by a saturating occupancy of (sequences × heads per
   GPU) / (72 SMs × blocks_per_sm_to_saturate), sharpness {occupancy_sharpness:g}. All-reduce
   over PCIe: latency + 2(n−1)/n × bytes / bus bandwidth.
2. An iteration costs what Vidur 0.0.26's sklearn predictor computes from these tables
   (keys rounded as it rounds them; layers × per-block sum as in its ExecutionTime;
   NCCL CPU launch overhead {nccl_ms} ms per all-reduce) plus the serving engine's CPU work,
   `overhead_base_ms + overhead_per_request_ms × requests`, which that Vidur release does
   not model. The overhead is **measured, not fitted**: the least-squares line through
   Vidur's profile of vLLM's CPU phases (schedule, sampler, input preparation, output
   processing, Ray hand-off; means) for LLaMA-2-7B at tensor parallelism 1 on an A40 — the
   A10's GA102 die — at batch sizes 8–48
   (https://github.com/microsoft/vidur/blob/main/data/profiling/a40/cpu_overheads.csv),
   plus, for the artifact's serving engine (vLLM 0.1.2), the per-sequence cost of its
   sampler loop, {sampler_loop_ms} ms per request (what vectorising it saved, vLLM PR #820;
   the derivation and its inputs are in `sim/hardware/overheads.py`). The Figure 10 rows
   were measured on vLLM 0.2.0, whose sampler is vectorised, so they are fitted with
   {figure_10_per_request_ms} ms per request. `sim.hardware.ReplicaModel` adds the
   serving engine's; `load_replica_model(overhead_base=..., overhead_per_request=...)`
   (a run's `cluster.overhead`) replaces it.
3. The fitted constants below minimise, with `scipy.optimize.least_squares`, the relative
   error of all 24 prefill and decode rows (LLaMA-7B TP1 and LLaMA-30B TP4 together), one
   residual for the LLaMA-7B heaviest decode step over the one-request step against the
   paper's 2.6× (Llumnix OSDI'24 §2, Figure 4, LLaMA-7B on A10: "degrades by up to 2.6×";
   heaviest = the instance's KV capacity filled with requests of at most 256 tokens, one
   request = a context of up to 256 tokens, `sim/hardware/calibration.py`), and the
   {linear_rows} rows of the A40 token operators, transferred to the A10 by memory
   bandwidth (× 696 / 600 GB/s) and weighted 1/√{linear_rows} each, so that source counts
   as one residual. Constants are then rounded to {significant_digits} significant digits.

| constant | value | |
|---|---|---|
{constant_lines}

`kernel_overhead_us` is fixed: the rows cannot separate it from the efficiencies. 3 µs is what
the smallest kernels take on the same GA102 die in Vidur's published A40 profiles
(1–4 µs for norms, adds and RoPE at a few tokens).

Why several bandwidth efficiencies: every decode row of the table holds ~8k tokens, so the
table cannot say how much of a step is streaming weights and how much is reading the KV
cache. The A40 rows measure the weight stream on the same die directly, at every decode
batch up to 128 tokens (all memory-bound on the A40: fewer FLOPs per weight byte than its ridge point);
they show cuBLAS's kernel change between 32 and 48 tokens, which one efficiency cannot
follow. The fit settles the skinny weight stream at {memory_efficiency:.1%} of 600 GB/s (cap
{max_memory_efficiency:.0%}; with the LM head and embedding, which Vidur's blocks omit, the
one-request step streams LLaMA-7B's 13.5 GB at ~{weight_stream_gbps:.0f} GB/s), the tiled one at
{tiled_memory_efficiency:.1%}, and paged decode attention at {decode_attention_efficiency:.0%}
when the SMs are occupied. The heaviest/one-request ratio is then {ratio:.2f},
{ratio_vs_target_pct:+.1f}% from 2.6 (bound ±10%). Residuals of the A40 rows, modelled over
transferred, at {linear_tokens}: {linear_errors} (`llumsim calibrate` checks each within
±10%, and shows the heavy-batch decode steps part by part beside what was measured of them).

## Light-batch decode (the performance model at the predictor's lookup keys)

| model | one request ms | floor: weights ÷ 600 GB/s + overhead ms | heaviest step ms | ratio | at 1,600 tokens ms |
|---|---|---|---|---|---|
{range_lines}

The floor is the GPU time to stream every weight of one GPU once at the datasheet bandwidth
(LLaMA-7B: 13.5 GB → 22.5 ms) plus the engine's overhead for one request. "At 1,600 tokens"
is the paper's load target for instances with high-priority requests, below which it
reports decode speed near its ideal.

## Fit (the performance model at the predictor's lookup keys)

| model | quantity | seq_len | measured ms | modelled ms | error |
|---|---|---|---|---|---|
{row_lines}

`prefill` = one fresh sequence of seq_len tokens; `decode` = one step of 8192 // seq_len
requests whose context is seq_len tokens including the new one.

## Files and grids (Vidur's profiling CSV schema, `time_stats.<op>.median` in ms)
- `compute/a10/<model>/mlp.csv.xz`: every multiple of 8 tokens up to {max_tokens:,}
  (Vidur rounds a batch's token count up to 8).
- `compute/a10/<model>/attention.csv.xz`: prefill rows for every KV size that is a multiple of
  256 and chunk that is a multiple of 32 (chunk ≤ KV, both ≤ {max_tokens:,}); decode
  rows for batch 1..{max_decode_batch} × every KV multiple of 256. `kv_cache_size` is the
  context *including* this iteration's tokens, because that is how this Vidur release queries
  the table (`Batch.num_kv_tokens` = processed + new). Block size {profile_block_size}.
- `network/a10_pcie_4/all_reduce.csv.xz`: 4-GPU ring, sizes every 8 KiB up to 256 MiB.
  `a10_pcie_1` has no collectives (config only).
- Only the `median` statistic is written: a model has no spread to report.

Each grid is Vidur's own lookup resolution, so the predictor never interpolates between
profiled points. Times are written with 6 significant digits.

## Device memory (KV capacity, computed at load by `sim/hardware/memory.py`)
vLLM 0.1.2 sizes its cache against the total CUDA reports, {visible_memory_bytes:,} bytes
(22,731 MiB: an A10 on the R470 drivers of the artifact's time; the source and later
drivers' figures are in `sim/hardware/skus.py`): blocks = floor((utilisation × total −
torch's peak allocation in its profile run) / block bytes). The peak is modelled tensor by
tensor from that vLLM's code (weights, rotary caches, cuBLAS workspace, the all-reduce buffer
under TP, the profile inputs, and the widest of the MLP, attention and sampler phases);
`llumsim calibrate` compares it with the artifact's measured A10 capacities
(`sim/hardware/data/a10_kv_capacity.csv`).
"""
