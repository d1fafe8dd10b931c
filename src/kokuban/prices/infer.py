"""Back-calculation (逆算): from a price (and a speed) to what must hold for the provider.

Open model: given its price on a sheet (or by hand), an accelerator and its hourly price, solve for
the break-even batch, the margin at a batch (the one a measured per-user speed allows, or a given
one), and how the answer moves with the accelerator count. Inputs that are uncertain (achievable
fractions of peak, the measured speed) widen each result to a range: pessimistic / central /
optimistic.

Closed model: the sizes (active parameters) and batches consistent with a price and a speed. Each
(active, batch, GPU count) point is a coarse model on the roofline; it is consistent when its per-user
speed is within ±`speed_tolerance` of the measured one and a token costs at most the price.

Compare: one workload's cost on each API sheet beside self-hosting on each catalog accelerator.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from kokuban.core import memory, roofline
from kokuban.errors import KokubanError
from kokuban.prices.costing import (
    api_request_usd,
    batch_for_speed,
    break_even_batch,
    decode_curve,
    margins,
    self_host_request_usd,
    usd_per_m_input,
)
from kokuban.prices.sheets import PriceRow
from kokuban.specs.catalog import accelerator_catalog
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import Accelerator, Efficiency
from kokuban.specs.model import ModelSpec

#: Achievable fractions of peak at the two ends of the range (central = the deployment's own).
PESSIMISTIC = {"compute": 0.4, "memory": 0.6, "interconnect": 0.5}
OPTIMISTIC = {"compute": 0.75, "memory": 0.9, "interconnect": 0.9}
SPEED_SPREAD = 0.10  # a measured per-user speed is taken as ±10 %


def _corners(dep: Deployment) -> dict[str, Deployment]:
    return {
        "pessimistic": replace(dep, efficiency=dep.efficiency.updated(**PESSIMISTIC)),
        "central": dep,
        "optimistic": replace(dep, efficiency=dep.efficiency.updated(**OPTIMISTIC)),
    }


def _one(dep: Deployment, row: PriceRow, context: int, prompt: int, speed: float | None, batch: int | None) -> dict[str, Any]:
    curve = decode_curve(dep, context)
    top = curve.at(curve.max_batch)
    be = break_even_batch(curve, row.output_usd_per_m)
    out: dict[str, Any] = {
        "max_batch": curve.max_batch, "usd_per_m_output_at_max_batch": top["usd_per_m_output"],
        "break_even_batch": be,
        "break_even_tokens_per_s_per_user": curve.at(be)["tokens_per_s_per_user"] if be else None,
        "margin_at_max_batch": {k: float(v) for k, v in margins(row.output_usd_per_m, top["usd_per_m_output"]).items()},
        "batch1_tokens_per_s_per_user": curve.at(1)["tokens_per_s_per_user"],
    }
    cin = usd_per_m_input(dep, prompt)
    out["usd_per_m_input"] = cin
    out["margin_on_input"] = {k: float(v) for k, v in margins(row.input_usd_per_m, cin).items()}
    if speed:
        b = batch_for_speed(curve, speed)
        at = curve.at(b)
        out["speed_batch"] = b
        out["usd_per_m_output_at_speed_batch"] = at["usd_per_m_output"]
        out["margin_at_speed_batch"] = {k: float(v) for k, v in margins(row.output_usd_per_m, at["usd_per_m_output"]).items()}
        out["tokens_per_s_per_node_at_speed_batch"] = at["tokens_per_s"] * 8 / dep.num_gpus
    if batch:
        if batch > curve.max_batch:
            raise KokubanError(f"infeasible: batch {batch} does not fit at context {context:,} on {dep.num_gpus}× "
                               f"{dep.accelerator.id} (memory allows {curve.max_batch})")
        at = curve.at(batch)
        out["given_batch"] = {"batch": batch, **at,
                              "margin": {k: float(v) for k, v in margins(row.output_usd_per_m, at["usd_per_m_output"]).items()}}
    return out


def infer_open(row: PriceRow, dep: Deployment, *, context: int = 8192, prompt_tokens: int | None = None,
               speed: float | None = None, batch: int | None = None, max_gpus_factor: int = 8) -> dict[str, Any]:
    """Break-even batch, margins and their range; then the same at other accelerator counts.

    Ranges: efficiencies at PESSIMISTIC / central / OPTIMISTIC, and a measured speed taken 10 % higher in
    the pessimistic corner and 10 % lower in the optimistic one.
    """
    prompt = prompt_tokens or context
    corners = {}
    for name, d in _corners(dep).items():
        s = None if speed is None else speed * {"pessimistic": 1 + SPEED_SPREAD, "central": 1.0, "optimistic": 1 - SPEED_SPREAD}[name]
        corners[name] = _one(d, row, context, prompt, s, batch)
    be = corners["central"]["break_even_batch"]
    if be is None:
        c = corners["central"]
        infeasible = (f"even at the memory-limited batch {c['max_batch']} a million output tokens cost "
                      f"${c['usd_per_m_output_at_max_batch']:.3g} > the price ${row.output_usd_per_m:g}: memory (KV capacity) "
                      f"binds; more accelerators, cheaper hours or a lower-precision KV would be needed")
    else:
        infeasible = None
    counts = []
    for n in memory.GPU_COUNTS:
        if n < dep.num_gpus or n > dep.num_gpus * max_gpus_factor:
            continue
        d = dep.with_gpus(n)
        try:
            r = _one(d, row, context, prompt, None, None)
        except KokubanError:
            continue
        counts.append({"gpus": n, **{k: r[k] for k in ("max_batch", "break_even_batch", "break_even_tokens_per_s_per_user",
                                                      "usd_per_m_output_at_max_batch", "batch1_tokens_per_s_per_user")},
                       "profit_over_cost_at_max_batch": r["margin_at_max_batch"]["profit_over_cost"]})
    return {
        "price": row.as_dict(), "deployment": dep.describe(), "gpus": dep.num_gpus,
        "usd_per_gpu_hour": dep.price_per_hour_usd, "context": context, "prompt_tokens": prompt, "speed": speed,
        "range": corners, "by_gpu_count": counts, "infeasible": infeasible,
        "assumptions": [
            f"decode at context {context:,} tokens, every request at that context; prefill of one {prompt:,}-token prompt",
            (f"efficiency range compute/memory/link: {PESSIMISTIC} … central {dep.efficiency.compute}/"
            f"{dep.efficiency.memory}/{dep.efficiency.interconnect} … {OPTIMISTIC}"),
            "the fleet is busy all the time (utilisation 1); margins are on accelerator rent only",
            *([f"measured speed {speed:g} tokens/s per user taken as ±{SPEED_SPREAD:.0%}"] if speed else []),
        ],
    }


# ---- closed models -----------------------------------------------------------------------------------
def infer_closed(price_usd_per_m_output: float, tokens_per_s_per_user: float, accelerator: Accelerator, *,
                 usd_per_gpu_hour: float | None = None, context: int = 8192, kv_bytes_per_token: float = 160e3,
                 total_over_active: float = 1.0, weights_dtype: str = "fp8", efficiency: Efficiency | None = None,
                 active_params: np.ndarray | None = None, batches: np.ndarray | None = None,
                 speed_tolerance: float = 0.25) -> dict[str, Any]:
    """The (active parameters, batch) pairs consistent with a price and a per-user speed.

    For each active size A (a coarse model: total = A × `total_over_active`, `kv_bytes_per_token` at
    16-bit KV, `weights_dtype` weights), each GPU count N in memory.GPU_COUNTS that holds batch B, a
    point is consistent when speed ∈ [s ÷ (1 + tol), s × (1 + tol)] and cost ≤ price; the best profit
    margin over N is kept. Raises, naming the binding constraint, when no point is consistent.
    """
    for name, v in (("price", price_usd_per_m_output), ("speed", tokens_per_s_per_user)):
        if not v > 0:
            raise KokubanError(f"{name} must be > 0, got {v!r}")
    a_grid = np.geomspace(1e9, 2e12, 48) if active_params is None else np.asarray(active_params, float)
    b_grid = np.unique(np.geomspace(1, 4096, 49).astype(int)) if batches is None else np.asarray(batches, int)
    price_h = accelerator.price_per_hour_usd if usd_per_gpu_hour is None else usd_per_gpu_hour
    if not price_h > 0:
        raise KokubanError(f"accelerator '{accelerator.id}' has no hourly price; give one", field="usd_per_gpu_hour",
                           value=usd_per_gpu_hour)
    lo, hi = tokens_per_s_per_user / (1 + speed_tolerance), tokens_per_s_per_user * (1 + speed_tolerance)
    margin = np.full((a_grid.size, b_grid.size), np.nan)
    gpus = np.full_like(margin, np.nan)
    speed_ok = np.zeros(margin.shape, bool)
    best_cost_at_speed = np.inf
    for i, a in enumerate(a_grid):
        model = ModelSpec.coarse("closed-stand-in", a * total_over_active, a, kv_bytes_per_token)
        base = Deployment.make(model, accelerator, 1, weights_dtype=weights_dtype, efficiency=efficiency,
                               price_per_hour_usd=price_h)
        for n in memory.GPU_COUNTS:
            dep = base.with_gpus(n)
            fits = b_grid <= int(memory.max_batch(dep, context))
            if not fits.any():
                continue
            step = roofline.decode_step(dep, b_grid, context)
            speed = 1.0 / np.asarray(step.step_time_s)
            usd = dep.usd_per_s * np.asarray(step.step_time_s) / b_grid * 1e6
            in_band = fits & (speed >= lo) & (speed <= hi)
            speed_ok |= in_band
            if in_band.any():
                best_cost_at_speed = min(best_cost_at_speed, float(usd[in_band].min()))
            m = price_usd_per_m_output / usd - 1
            ok = in_band & (usd <= price_usd_per_m_output) & ~(m <= np.nan_to_num(margin[i], nan=-np.inf))
            margin[i, ok] = m[ok]
            gpus[i, ok] = n
    feasible = ~np.isnan(margin)
    if not speed_ok.any():
        raise KokubanError(
            f"infeasible: no model of {a_grid[0]:.3g}–{a_grid[-1]:.3g} active parameters on up to "
            f"{memory.GPU_COUNTS[-1]}× {accelerator.id} decodes at {tokens_per_s_per_user:g} tokens/s per user "
            f"(±{speed_tolerance:.0%}) at context {context:,}: the speed constraint binds")
    if not feasible.any():
        raise KokubanError(
            f"infeasible: every configuration at {tokens_per_s_per_user:g} tokens/s per user costs at least "
            f"${best_cost_at_speed:.3g}/M output > the price ${price_usd_per_m_output:g}/M on {accelerator.id} at "
            f"${price_h:g}/h: the price constraint binds (by {best_cost_at_speed / price_usd_per_m_output:.2g}×)")
    ai, bi = np.nonzero(feasible)
    return {
        "price_usd_per_m_output": price_usd_per_m_output, "tokens_per_s_per_user": tokens_per_s_per_user,
        "accelerator": accelerator.id, "usd_per_gpu_hour": price_h, "context": context,
        "active_params_range": [float(a_grid[ai.min()]), float(a_grid[ai.max()])],
        "batch_range": [int(b_grid[bi.min()]), int(b_grid[bi.max()])],
        "gpus_range": [int(np.nanmin(gpus)), int(np.nanmax(gpus))],
        "best_profit_over_cost": float(np.nanmax(margin)),
        "grid": {"active_params": a_grid, "batch": b_grid, "profit_over_cost": margin, "gpus": gpus},
        "assumptions": [
            (f"coarse model: total = {total_over_active:g} × active parameters, {weights_dtype} weights, "
            f"{kv_bytes_per_token / 1e3:g} kB KV per token (16-bit), every request at context {context:,}"),
            f"consistent = per-user speed within ±{speed_tolerance:.0%} of {tokens_per_s_per_user:g} tokens/s and cost ≤ price",
            "GPU count free in 1…1024 (tensor parallel); utilisation 1; accelerator rent is the only cost",
        ],
    }


def plot_closed(result: dict[str, Any], path: str) -> str:
    """Save the feasible region (profit ÷ cost over active parameters × batch) as a PNG (matplotlib Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = result["grid"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    mesh = ax.pcolormesh(g["active_params"], g["batch"], np.asarray(g["profit_over_cost"]).T * 100, shading="nearest", cmap="viridis")
    fig.colorbar(mesh, ax=ax, label="best profit ÷ cost (%)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("active parameters")
    ax.set_ylabel("decode batch")
    ax.set_title(f"consistent with ${result['price_usd_per_m_output']:g}/M output at "
                 f"{result['tokens_per_s_per_user']:g} tok/s/user on {result['accelerator']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ---- compare one workload ------------------------------------------------------------------------------
def compare(model: ModelSpec, rows: list[PriceRow], *, prompt_tokens: int, output_tokens: int, requests: int,
            cache_hit: float = 0.0, tokens_per_s_per_user: float = 30.0, accelerators: dict[str, Accelerator] | None = None,
            efficiency: Efficiency | None = None, weights_dtype: str | None = None, lane: str = "standard") -> dict[str, Any]:
    """The workload's cost on each sheet row, and self-hosted on each accelerator.

    Self-hosting: of the accelerator counts from the fewest that hold batch 1 at prompt + output up to
    8× that, the cheapest, decoding at the largest batch that keeps `tokens_per_s_per_user` (see
    `pricing.self_host_request_usd`; busy all the time). Accelerators without an hourly price, or on
    which the model does not fit or cannot reach the speed, are listed with the reason.
    """
    if requests < 1 or prompt_tokens < 1 or output_tokens < 1:
        raise KokubanError("prompt, output and requests must be positive integers")
    context = prompt_tokens + output_tokens
    if context > model.max_context:
        raise KokubanError(f"prompt + output = {context:,} tokens exceeds {model.name}'s maximum of {model.max_context:,}")
    apis = []
    for row in rows:
        try:
            r = api_request_usd(row, prompt_tokens, output_tokens, cache_hit, lane)
        except KokubanError as exc:
            apis.append({"key": row.key, "usd": None, "reason": str(exc)})
            continue
        apis.append({"key": row.key, "open_model": row.open_model, "usd": r["usd"] * requests,
                     "usd_per_request": r["usd"], "notes": r["notes"], "source": row.source})
    hosts = []
    for acc in (accelerators or accelerator_catalog()).values():
        entry: dict[str, Any] = {"accelerator": acc.id, "usd_per_gpu_hour": acc.price_per_hour_usd}
        if not acc.price_per_hour_usd:
            hosts.append(entry | {"usd": None, "reason": "no hourly price in the catalog"})
            continue
        try:
            base = Deployment.make(model, acc, 1, weights_dtype=weights_dtype, efficiency=efficiency)
            n = memory.min_gpus_to_fit(base, 1, context)
            if n is None:
                raise KokubanError(f"does not fit on up to {memory.GPU_COUNTS[-1]} GPUs")
            best, last_error = None, None
            for count in (c for c in memory.GPU_COUNTS if n <= c <= n * 8):
                dep = base.with_gpus(count)
                try:
                    b = batch_for_speed(decode_curve(dep, context), tokens_per_s_per_user)
                except KokubanError as exc:
                    last_error = exc
                    continue
                r = self_host_request_usd(dep, prompt_tokens, output_tokens, cache_hit, b)
                if best is None or r["usd"] < best[2]["usd"]:
                    best = (dep, b, r)
            if best is None:
                raise last_error
            dep, b, r = best
            n = dep.num_gpus
        except KokubanError as exc:
            hosts.append(entry | {"usd": None, "reason": str(exc)})
            continue
        hosts.append(entry | {"gpus": n, "batch": b, "weights": dep.weights_dtype, "usd": r["usd"] * requests,
                              "usd_per_request": r["usd"], "gpu_hours": r["gpu_seconds"] * requests / 3600,
                              "tokens_per_s_per_user": r["tokens_per_s_per_user"], "bound": r["bound"]})
    key = lambda e: (e["usd"] is None, e["usd"] or 0)
    return {
        "workload": {"model": model.name, "prompt_tokens": prompt_tokens, "output_tokens": output_tokens,
                     "cache_hit": cache_hit, "requests": requests, "tokens_per_s_per_user": tokens_per_s_per_user,
                     "lane": lane},
        "apis": sorted(apis, key=key), "self_host": sorted(hosts, key=key),
        "assumptions": [
            ("self-hosted: the cheapest accelerator count (fewest that fit … 8× that), at the largest batch keeping the per-user speed, "
            "busy all the time (no idle hours, no engineering or power beyond the rental price)"),
            "cached prompt tokens cost nothing to self-host (their KV is resident); on an API they pay the cached price",
        ],
    }
