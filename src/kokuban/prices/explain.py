"""Read a price sheet backwards: each feature of the sheet against what the cost model says drives it.

    output ÷ input price     vs  decode cost ÷ prefill cost per token, at plausible batches
    long-context surcharge   vs  the batch (KV capacity) lost at the longer context, and its cost
    fast-lane multiplier     vs  the batch a higher per-user speed allows, and its cost
    batch-lane discount      vs  the cost at the memory-limited batch ÷ at an interactive batch
    cached-input discount    vs  prefill compute saved (a hit only moves the stored KV back into HBM)

Each feature is a typed result (`as_dict()` its JSON): the sheet's numbers, the model's numbers, the
assumptions and one sentence.
For a closed model the physics is that of a stand-in open model, which is an assumption and is said.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kokuban.core import cost, roofline
from kokuban.errors import KokubanError
from kokuban.prices.costing import Record, batch_for_speed, break_even_batch, decode_curve, usd_per_m_input
from kokuban.prices.sheets import PriceRow
from kokuban.specs.deployment import Deployment
from kokuban.specs.hardware import PCIE5_X16_BYTES_PER_S

#: Interactive speed assumed when the sheet states none (tokens/s per user), a typical chat stream.
INTERACTIVE_TOKENS_PER_S = 30.0
SHOWN_BATCHES = (1, 8, 32, 128, 512)


def stand_in_model(row: PriceRow) -> tuple[str, str]:
    """The open model whose physics stands in for a row: its own if open, else one by price tier.

    Closed rows (an assumption, stated with every result): output ≥ $5/M → deepseek-v3 (671 B total,
    37 B active MoE: frontier-class); ≥ $0.8/M → gpt-oss-120b (117 B, 5 B active); cheaper →
    gpt-oss-20b (21 B, 4 B active).
    """
    if row.open_model:
        return row.open_model, f"{row.key} serves the open model {row.open_model}"
    out = row.output_usd_per_m
    pick = "deepseek-v3" if out >= 5 else "gpt-oss-120b" if out >= 0.8 else "gpt-oss-20b"
    return pick, (f"ASSUMPTION: {row.key} is closed; its physics is that of the stand-in open model {pick} "
                  f"(chosen by the ${out:g}/M output price tier; override with the stand-in model)")


def _times(multiplier: float | None) -> str:
    """A price multiplier in a sentence ("1.5×"; a charge where the standard price is 0)."""
    return "a charge (against a free standard price)" if multiplier is None else f"{multiplier:.2g}×"


def _ratio_batch(batches: np.ndarray, ratios: np.ndarray, target: float) -> int:
    """The batch whose ratio is closest to `target` in log terms."""
    return int(batches[int(np.argmin(np.abs(np.log(ratios / target))))])


# ---- output vs input -------------------------------------------------------------------------------
@dataclass(frozen=True)
class OutputVsInputSheet(Record):
    output_over_input: float | None  # None when the sheet charges nothing for input


@dataclass(frozen=True)
class OutputVsInputModel(Record):
    usd_per_m_input: float
    decode_over_prefill_by_batch: dict[int, float]
    matching_batch: int | None
    max_batch: int


@dataclass(frozen=True)
class OutputVsInput(Record):
    """Price ratio output ÷ input against the cost ratio decode ÷ prefill per token."""

    feature: str = field(default="output_vs_input", init=False)
    sheet: OutputVsInputSheet
    model: OutputVsInputModel
    assumptions: tuple[str, ...]
    sentence: str


def output_vs_input(row: PriceRow, dep: Deployment, context: int, prompt_tokens: int) -> OutputVsInput:
    """Price ratio output ÷ input against cost ratio decode ÷ prefill per token, over the batch."""
    curve = decode_curve(dep, context)
    cin = usd_per_m_input(dep, prompt_tokens)
    ratios = curve.usd_per_m_output / cin
    price_ratio = row.output_usd_per_m / row.input_usd_per_m if row.input_usd_per_m else None
    shown = [b for b in SHOWN_BATCHES if b <= curve.max_batch] + [curve.max_batch]
    at = {int(b): float(ratios[b - 1]) if curve.batch[b - 1] == b else float(ratios[np.searchsorted(curve.batch, b)])
          for b in shown}
    match = None if price_ratio is None or price_ratio <= 0 else _ratio_batch(curve.batch, ratios, price_ratio)
    if price_ratio is None:
        head, tail = "The sheet charges nothing per input token", "so no decode batch matches its ratio"
    else:
        head = f"The sheet charges {price_ratio:.1f}× more per output token than per input token"
        if price_ratio < ratios.min():
            tail = (f"so the sheet's ratio is below the model's at every batch that fits: it implies a larger batch "
                    f"than {dep.num_gpus}× {dep.accelerator.id} can hold (more accelerators per replica) or a margin "
                    f"on input")
        else:
            tail = f"so the sheet's ratio matches a decode batch of about {match}"
    sentence = (
        f"{head}; a decode token costs {at[1]:.0f}× a prefill token at batch 1 but {at[curve.max_batch]:.1f}× at the "
        f"memory-limited batch {curve.max_batch}, {tail}."
    )
    return OutputVsInput(
        sheet=OutputVsInputSheet(output_over_input=price_ratio),
        model=OutputVsInputModel(usd_per_m_input=cin, decode_over_prefill_by_batch=at, matching_batch=match,
                                 max_batch=curve.max_batch),
        assumptions=(f"decode at context {context:,}; prefill of one {prompt_tokens:,}-token prompt",),
        sentence=sentence)


# ---- long context ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LongContextSheet(Record):
    """The sheet's long-context tier (the multipliers only when it has one; None where the standard price is 0)."""

    threshold_tokens: int | None
    input_multiplier: float | None = None
    output_multiplier: float | None = None

    def as_dict(self) -> dict[str, object]:
        return super().as_dict() if self.threshold_tokens is not None else {"threshold_tokens": None}


@dataclass(frozen=True)
class LongContextModel(Record):
    """Max batch and cost per token at the two contexts (the cost multipliers only when the long one fits)."""

    OMIT_IF_NONE = ("output_cost_multiplier", "input_cost_multiplier")
    short_context: int
    long_context: int
    max_batch_short: int
    max_batch_long: int
    output_cost_multiplier: float | None = None
    input_cost_multiplier: float | None = None


@dataclass(frozen=True)
class LongContext(Record):
    """Long-context tier against the KV capacity lost at the longer context."""

    feature: str = field(default="long_context", init=False)
    sheet: LongContextSheet
    assumptions: tuple[str, ...]
    model: LongContextModel
    sentence: str


def long_context(row: PriceRow, dep: Deployment, context: int) -> LongContext:
    """Long-context tier against KV capacity: max batch and cost per token below vs above the threshold."""
    m = dep.model
    if row.long_context_threshold_tokens:
        short, long = row.long_context_threshold_tokens, min(2 * row.long_context_threshold_tokens, m.max_context)
        def tier(long_price: float | None, price: float) -> float | None:  # long ÷ standard (None if that is 0)
            return (long_price or price) / price if price else None

        sheet = LongContextSheet(threshold_tokens=short,
                                 input_multiplier=tier(row.long_input_usd_per_m, row.input_usd_per_m),
                                 output_multiplier=tier(row.long_output_usd_per_m, row.output_usd_per_m))
    else:
        short, long = context, min(8 * context, m.max_context)
        sheet = LongContextSheet(threshold_tokens=None)
    notes = []
    if long <= short:
        short, long = m.max_context // 4, m.max_context
        notes.append(f"{m.name} stops at {m.max_context:,} tokens, short of the threshold: compared at {short:,} "
                     f"and {long:,}")
    assumptions = (f"compare contexts {short:,} and {long:,} tokens, each at its memory-limited batch", *notes)
    cs = decode_curve(dep, short)
    try:
        cl = decode_curve(dep, long)
    except KokubanError as exc:  # the long context does not fit at all: that is the finding
        return LongContext(
            sheet=sheet, assumptions=assumptions,
            model=LongContextModel(short_context=short, long_context=long, max_batch_short=cs.max_batch,
                                   max_batch_long=0),
            sentence=(f"At {long:,} tokens not one request fits beside the weights on this deployment ({exc}); "
                      f"the long tier needs more accelerators per request."))
    cost_s, cost_l = cs.at(cs.max_batch).usd_per_m_output, cl.at(cl.max_batch).usd_per_m_output
    in_s, in_l = usd_per_m_input(dep, short), usd_per_m_input(dep, long)
    model = LongContextModel(short_context=short, long_context=long, max_batch_short=cs.max_batch,
                             max_batch_long=cl.max_batch, output_cost_multiplier=cost_l / cost_s,
                             input_cost_multiplier=in_l / in_s)
    if sheet.threshold_tokens:
        sentence = (
            f"Above {sheet.threshold_tokens:,} tokens the sheet charges {_times(sheet.input_multiplier)} for input and "
            f"{_times(sheet.output_multiplier)} for output; at {long:,} tokens the KV cache cuts the batch from "
            f"{cs.max_batch} to {cl.max_batch}, which makes an output token cost {cost_l / cost_s:.2g}× and a prompt "
            f"token {in_l / in_s:.2g}× (quadratic attention).")
    else:
        sentence = (
            f"This sheet has no long-context tier; going from {short:,} to {long:,} tokens cuts the batch from "
            f"{cs.max_batch} to {cl.max_batch} and makes an output token cost {cost_l / cost_s:.2g}×, which the flat "
            f"price averages over.")
    return LongContext(sheet=sheet, assumptions=assumptions, model=model, sentence=sentence)


# ---- fast lane -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FastLaneSheet(Record):
    priority_multiplier: float | None
    fast_output_tokens_per_s: float | None


@dataclass(frozen=True)
class FastLaneModel(Record):
    """A priced fast lane: the batch its multiplier pays for and the speed that batch gives."""

    standard_batch: int
    standard_tokens_per_s_per_user: float
    fast_batch: int
    fast_tokens_per_s_per_user: float
    speedup: float


@dataclass(frozen=True)
class NoFastLaneModel(Record):
    """No fast lane on the sheet: what doubling the per-user speed would cost."""

    standard_batch: int
    batch_for_2x_speed: int
    cost_multiplier_for_2x_speed: float


@dataclass(frozen=True)
class FastLane(Record):
    """Priority multiplier against the smallest batch it pays for."""

    feature: str = field(default="fast_lane", init=False)
    sheet: FastLaneSheet
    assumptions: tuple[str, ...]
    model: FastLaneModel | NoFastLaneModel
    sentence: str


def fast_lane(row: PriceRow, dep: Deployment, context: int, speed: float | None) -> FastLane:
    """Priority multiplier against the smallest batch it pays for, and the per-user speed that batch gives."""
    curve = decode_curve(dep, context)
    std_speed = speed or row.output_tokens_per_s
    std_b = batch_for_speed(curve, std_speed) if std_speed else curve.max_batch
    std = curve.at(std_b)
    mult = row.priority_multiplier
    sheet = FastLaneSheet(priority_multiplier=mult, fast_output_tokens_per_s=row.fast_output_tokens_per_s)
    assumptions = (f"standard lane decodes at batch {std_b} "
                   + (f"({std_speed:g} tokens/s per user)" if std_speed else "(memory-limited)"),)
    if not mult:
        two = min(curve.at(1).tokens_per_s_per_user, 2 * std.tokens_per_s_per_user)
        b2 = batch_for_speed(curve, two)
        ratio = curve.at(b2).usd_per_m_output / std.usd_per_m_output
        return FastLane(
            sheet=sheet, assumptions=assumptions,
            model=NoFastLaneModel(standard_batch=std_b, batch_for_2x_speed=b2, cost_multiplier_for_2x_speed=ratio),
            sentence=(f"No fast lane on this sheet; doubling the per-user speed (to {two:.0f} tokens/s) would "
                      f"mean batch {b2} instead of {std_b}, a token costing {ratio:.2g}×."))
    fb = break_even_batch(curve, mult * std.usd_per_m_output) or 1
    fast = curve.at(fb)
    model = FastLaneModel(standard_batch=std_b, standard_tokens_per_s_per_user=std.tokens_per_s_per_user,
                          fast_batch=fb, fast_tokens_per_s_per_user=fast.tokens_per_s_per_user,
                          speedup=fast.tokens_per_s_per_user / std.tokens_per_s_per_user)
    return FastLane(
        sheet=sheet, assumptions=assumptions, model=model,
        sentence=(f"A {mult:g}× price pays for running at batch {fb} instead of {std_b}: each user gets "
                  f"{fast.tokens_per_s_per_user:.0f} instead of {std.tokens_per_s_per_user:.0f} tokens/s "
                  f"({model.speedup:.2g}× faster) on the same accelerators."))


# ---- batch discount --------------------------------------------------------------------------------
@dataclass(frozen=True)
class BatchDiscountSheet(Record):
    batch_multiplier: float | None


@dataclass(frozen=True)
class BatchDiscountModel(Record):
    """Cost at the memory-limited batch ÷ at the interactive one; the utilisation at equal margins (with a lane)."""

    OMIT_IF_NONE = ("utilisation_at_equal_margin",)
    interactive_batch: int
    max_batch: int
    cost_ratio: float
    utilisation_at_equal_margin: float | None = None


@dataclass(frozen=True)
class BatchDiscount(Record):
    """Batch-lane multiplier against the cost ratio of the memory-limited and the interactive batch."""

    feature: str = field(default="batch_discount", init=False)
    sheet: BatchDiscountSheet
    model: BatchDiscountModel
    assumptions: tuple[str, ...]
    sentence: str


def batch_discount(row: PriceRow, dep: Deployment, context: int, speed: float | None) -> BatchDiscount:
    """Batch-lane multiplier d against r = cost at the memory-limited batch ÷ cost at an interactive batch.

    With the interactive fleet busy a fraction u of the time, its cost per token is c_int ÷ u; the
    discount leaves both lanes the same margin when d = r·u, i.e. u = d ÷ r.
    """
    curve = decode_curve(dep, context)
    target = speed or row.output_tokens_per_s or INTERACTIVE_TOKENS_PER_S
    d = row.batch_multiplier or row.flex_multiplier
    try:
        bi = batch_for_speed(curve, target)
    except KokubanError:
        bi = 1
    ci, cm = curve.at(bi).usd_per_m_output, curve.at(curve.max_batch).usd_per_m_output
    r = cm / ci
    sheet = BatchDiscountSheet(batch_multiplier=d)
    assumptions = (f"interactive lane at {target:g} tokens/s per user; batch lane at the memory limit, always busy",)
    if not d:
        return BatchDiscount(
            sheet=sheet, model=BatchDiscountModel(interactive_batch=bi, max_batch=curve.max_batch, cost_ratio=r),
            assumptions=assumptions,
            sentence=(f"No batch lane on this sheet; batching to the memory limit ({curve.max_batch}) instead of "
                      f"batch {bi} would make a token cost {r:.2g}×."))
    u = d / r
    if bi == curve.max_batch:
        sentence = (f"At {target:g} tokens/s per user the interactive lane already runs at the memory limit (batch "
                    f"{bi}), so batching saves nothing per step; the {d:g}× batch price is paid for by utilisation "
                    f"alone: equal margins if the interactive lane is busy {u:.0%} of the time.")
    elif u >= 1:
        sentence = (f"Batching to {curve.max_batch} makes a token cost {r:.2g}× one at the interactive batch {bi}, "
                    f"less than the {d:g}× batch price, so the batch lane earns a higher margin than the interactive "
                    f"lane even if that one were always busy.")
    else:
        sentence = (f"Batching to {curve.max_batch} instead of {bi} makes a token cost {r:.2g}×; a {d:g}× batch price "
                    f"keeps the same margin as the interactive lane if that lane is busy {u:.0%} of the time.")
    return BatchDiscount(
        sheet=sheet, model=BatchDiscountModel(interactive_batch=bi, max_batch=curve.max_batch, cost_ratio=r,
                                              utilisation_at_equal_margin=u),
        assumptions=assumptions, sentence=sentence)


# ---- cached input ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CachedInputSheet(Record):
    cached_over_input: float | None


@dataclass(frozen=True)
class CachedInputModel(Record):
    """A miss (prefill) against a hit (KV reload), each USD per million prompt tokens; hits as [best, worst]."""

    usd_per_m_input_miss: float
    kv_bytes_per_token: float
    usd_per_m_input_hit: tuple[float, float]
    hit_over_miss: tuple[float, float]


@dataclass(frozen=True)
class CachedInput(Record):
    """Cached-input price against the prefill compute a hit saves."""

    feature: str = field(default="cached_input", init=False)
    sheet: CachedInputSheet
    model: CachedInputModel
    assumptions: tuple[str, ...]
    sentence: str


def kv_reload_usd_per_m(dep: Deployment, kv_bytes_per_token: float, link_bytes_per_s: float) -> float:
    """USD per million prompt tokens of moving each token's stored KV over a link into one GPU's HBM:
    seconds per token = KV bytes per token ÷ link bytes/s, priced at one accelerator's rate (`cost.usd_of_seconds`
    of a one-GPU deployment), per million tokens (`cost.usd_per_m_tokens`)."""
    return float(cost.usd_per_m_tokens(cost.usd_of_seconds(dep.with_gpus(1), kv_bytes_per_token / link_bytes_per_s), 1))


def cached_input(row: PriceRow, dep: Deployment, prompt_tokens: int) -> CachedInput:
    """Cached-input price against the prefill compute a hit saves.

    A miss costs a prefill (`usd_per_m_input`). A hit only moves the token's stored KV bytes into HBM
    (`kv_reload_usd_per_m`), bounded below by the HBM at the KV-read fraction the attention kernels reach
    (`Efficiency.kv_memory_fraction`, as the core's KV reads) and above by a PCIe Gen5 x16 host link (64 GB/s).
    Storage is not priced.
    """
    cin = usd_per_m_input(dep, prompt_tokens)
    kv_per_token = float(roofline.kv_bytes_per_request(dep, prompt_tokens)) / prompt_tokens
    hbm = dep.accelerator.memory_bandwidth_bytes_per_s * dep.efficiency.kv_memory_fraction
    fast = kv_reload_usd_per_m(dep, kv_per_token, hbm)
    slow = kv_reload_usd_per_m(dep, kv_per_token, PCIE5_X16_BYTES_PER_S)
    sheet_ratio = None
    if row.cached_input_usd_per_m is not None and row.input_usd_per_m:
        sheet_ratio = row.cached_input_usd_per_m / row.input_usd_per_m
    if sheet_ratio is None:
        sentence = (f"No cached-input price on this sheet; a hit would cost {fast / cin:.2%}–{slow / cin:.2%} of a "
                    f"miss (moving {kv_per_token / 1e3:.0f} kB of KV per token instead of recomputing it).")
    else:
        sentence = (f"The sheet bills a cache hit at {sheet_ratio:.0%} of a miss; recomputing costs ${cin:.3g}/M while "
                    f"reloading the {kv_per_token / 1e3:.0f} kB of KV per token costs "
                    f"{fast / cin:.2%}–{slow / cin:.2%} of that, so the hit price is mostly storage and margin.")
    return CachedInput(
        sheet=CachedInputSheet(cached_over_input=sheet_ratio),
        model=CachedInputModel(usd_per_m_input_miss=cin, kv_bytes_per_token=kv_per_token,
                               usd_per_m_input_hit=(fast, slow), hit_over_miss=(fast / cin, slow / cin)),
        assumptions=((f"a {prompt_tokens:,}-token prompt; a hit reloads KV at HBM speed (best) or over PCIe Gen5 "
                     f"(worst); storage unpriced"),),
        sentence=sentence)


Feature = OutputVsInput | LongContext | FastLane | BatchDiscount | CachedInput


def explain(row: PriceRow, dep: Deployment, *, context: int = 8192, prompt_tokens: int | None = None,
            speed: float | None = None) -> tuple[Feature, ...]:
    """All five features, in sheet order."""
    prompt = prompt_tokens or context
    return (
        output_vs_input(row, dep, context, prompt),
        long_context(row, dep, context),
        fast_lane(row, dep, context, speed),
        batch_discount(row, dep, context, speed),
        cached_input(row, dep, prompt),
    )
