"""The readable blackboard: an Estimate's terms, the bound, the memory and the money, as text.

Presentation only: it formats numbers the core computed; it never recomputes physics.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from kokuban.present.format import gb, secs, si
from kokuban.usecases.estimate import Estimate


def blackboard(con: Console, est: Estimate) -> None:
    d = est.as_dict()
    m, hw, mem, dec, pre, money = d["model"], d["hardware"], d["memory"], d["decode"], d["prefill"], d["cost"]
    eff, prec = d["efficiency"], d["precision"]
    moe = f", MoE {m['top_k']}/{m['experts']} experts" if m["experts"] else ""
    con.print(f"[bold]黒板 kokuban[/bold] — {m['name']} on {hw['gpus']}× {hw['name']} ({hw['layout'].upper()})")
    con.print(
        f"model: {si(m['params_total'])} params, {si(m['params_active'])} active{moe}; {m['attention'].upper()} KV "
        f"{si(m['kv_bytes_per_token'], 'B')}/token in {prec['kv']}"
        + (f" ({si(m['kv_bytes_per_token_beyond_windows'], 'B')}/token beyond the sliding windows)"
           if m["kv_bytes_per_token_beyond_windows"] != m["kv_bytes_per_token"] else "")
        + (f" + {si(m['state_bytes_per_request'], 'B')} of recurrent state per request (constant)"
           if m["state_bytes_per_request"] else "")
    )
    con.print(
        f"precision: weights {prec['weights']}"
        + (f", experts {prec['experts']} (compute {prec['experts_compute']})" if prec["experts"] != prec["weights"]
           else "")
        + f", KV {prec['kv']}, compute {prec['compute']}; "
        f"peak {si(hw['peak_flops'], 'FLOP/s')} × {eff['compute']}"
        + (" (bf16 large-GEMM fraction, scaled by dtype, tokens and GEMM shape)"
           if "kernels" in eff else "")
        + ", HBM "
        f"{si(hw['memory_bandwidth_bytes_per_s'], 'B/s')} × {eff['memory']}"
        + (f" (weights × {ratio}: this GPU's own weight stream)"
           if (ratio := eff.get("kernels", {}).get("weight_memory_ratio", 1.0)) != 1.0 else "")
    )
    if hw["ggml_mmq_flops_per_s"] or hw["ggml_mmvq_bytes_per_s"]:
        con.print("llama.cpp's GGUF kernels, bound per SM: " + "; ".join(_ggml_bounds(hw, eff["kernels"])))
    for note in m["notes"]:
        con.print(f"  · {note}")

    t = Table(title=f"decode step: batch {dec['batch']} at context {dec['context']:,}", show_edge=False)
    t.add_column("term")
    t.add_column("work (whole deployment)", justify="right")
    t.add_column("time per GPU", justify="right")
    t.add_column("per token", justify="right")
    br = dec["breakdown"]
    def per_tok(seconds: float) -> str:  # the same seconds, shown per token of the batch
        return secs(seconds / dec["batch"])
    experts = f", {dec['experts_touched_per_layer']:.1f} experts/layer" if m["experts"] else ""
    lin_c = br["multiply_compute_s"]
    t.add_row("multiply compute", si(dec["multiply_flops"], "FLOP"), secs(lin_c), per_tok(lin_c))
    t.add_row(
        "weight read (shared)",
        si(dec["weights_read_bytes"], "B") + experts,
        secs(br["weights_s"]),
        per_tok(br["weights_s"]),
    )
    t.add_row(
        "attention compute",
        si(dec["attention_flops"], "FLOP"),
        secs(br["attention_compute_s"]),
        per_tok(br["attention_compute_s"]),
    )
    t.add_row("KV read (per request)", si(dec["kv_read_bytes"], "B"), secs(br["kv_s"]), per_tok(br["kv_s"]))
    t.add_row(
        "communication",
        si(dec["comm_bytes_per_gpu"], "B") if dec["comm_bytes_per_gpu"] else "-",
        secs(br["comm_s"]),
        per_tok(br["comm_s"]),
    )
    sync = br.get("sync_s", 0.0)
    loss = eff.get("kernels", {}).get("tp_sync_loss", 0.0)
    if sync:
        t.add_row("TP barrier wait", f"{loss:g} × the kernels' time", secs(sync), per_tok(sync))
    if br["overhead_s"]:
        t.add_row("fixed overhead", "", secs(br["overhead_s"]), per_tok(br["overhead_s"]))
    kernel = "max" if eff["overlap"] == 1 else f"max+{1 - eff['overlap']:.2g}·min"
    formula = f"{kernel}(multiply, weights) + {kernel}(attention, KV) + comm"
    formula = "step = " + (f"({formula})·(1 + {loss:g})" if sync else formula) + (
        " + overhead" if br["overhead_s"] else ""
    )
    t.add_row("[bold]step[/bold]", f"bound: [bold]{dec['bound']}[/bold]",
              f"[bold]{secs(dec['step_time_s'])}[/bold]", secs(dec["step_time_s"] / dec["batch"]))
    t.caption = formula
    con.print(t)
    con.print(
        f"decode: {dec['tokens_per_s']:,.1f} tokens/s in all, {dec['tokens_per_s_per_user']:,.1f} tokens/s per user"
    )
    con.print(
        f"prefill: {pre['batch']}× {pre['prompt_tokens']:,} tokens in {secs(pre['time_s'])} "
        f"({pre['tokens_per_s']:,.0f} tokens/s, bound: {pre['bound']}; compute {secs(pre['breakdown']['compute_s'])}, "
        f"weights {secs(pre['breakdown']['weights_s'])}, KV write {secs(pre['breakdown']['kv_s'])})"
    )
    fits = "[green]fits[/green]" if mem["fits"] else "[red]does not fit[/red]"
    con.print(
        f"memory per GPU: weights {gb(mem['weights_bytes'])} + KV {gb(mem['kv_bytes_per_gpu'])} "
        f"({gb(mem['kv_bytes_per_request'])}/request) + activations {gb(mem['activation_bytes'])} = "
        f"{gb(mem['used_bytes'])} of {gb(mem['usable_bytes'])} usable ({gb(mem['capacity_bytes'])} HBM): {fits}; "
        f"largest batch at this context: {mem['max_batch']:,}"
    )
    split = money["decode_split_usd_per_m"]
    con.print(
        f"money at ${money['usd_per_hour']:.2f}/h: input ${money['usd_per_m_input']:.3g}/M tokens, "
        f"output ${money['usd_per_m_output']:.3g}/M tokens "
        f"(= compute ${split['compute']:.3g} + weights ${split['weights']:.3g} + KV ${split['kv']:.3g}"
        + (f" + comm ${split['comm']:.3g}" if split["comm"] else "")
        + (f" + overhead ${split['overhead']:.3g}" if split["overhead"] else "") + ")"
    )
    if "generation" in d:
        g = d["generation"]
        con.print(
            f"generation: {g['batch']}× ({g['prompt_tokens']:,} in → {g['output_tokens']:,} out): TTFT "
            f"{secs(g['ttft_s'])}, "
            f"total {secs(g['total_time_s'])}, {g['output_tokens_per_s']:,.1f} output tokens/s in all, "
            f"${g['usd_per_request']:.4g} per request"
        )


def _ggml_bounds(hw: dict, k: dict) -> list[str]:
    """The blackboard's words for llama.cpp's per-SM bounds (`core.roofline.ggml_per_sm`), terms as they multiply."""
    out, sms, clock = [], f"{hw['sm_count']} SMs", si(hw["boost_clock_hz"], "Hz")
    if hw["ggml_mmq_flops_per_s"]:
        out.append(f"MMQ (prompts) {sms} × {clock} × {k['ggml_mmq_ops_per_cycle']:g} ops/cycle = "
                   f"{si(hw['ggml_mmq_flops_per_s'], 'FLOP/s')} in place of the tensor-core peak")
    if hw["ggml_mmvq_bytes_per_s"]:
        per_sm = [si(k["ggml_sm_stream_bytes_per_s"], "B/s")] if k["ggml_sm_stream_bytes_per_s"] else []
        if k["ggml_sm_stream_bytes_per_cycle"]:
            per_sm.append(f"{k['ggml_sm_stream_bytes_per_cycle']:g} B/cycle × {clock}")
        out.append(f"MMVQ (decode) at most {sms} × ({' + '.join(per_sm)}) = {si(hw['ggml_mmvq_bytes_per_s'], 'B/s')}")
    return out
