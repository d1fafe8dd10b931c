"""`kokuban agent`: what an agent run costs, on an API price sheet or on your own deployment.

The scenario comes from exactly one of: a preset (`preset`), a scenario file (`scenario_file`), a trace
(`trace`, JSONL), or the shape fields (`steps`, `system_tokens`, `output_tokens`, `tool_tokens`, `gap_s`); shape
fields given beside a preset or a file replace its values. `price` prices the run on a sheet row; `model` +
`gpu` (and the deployment fields) price it self-hosted. `compaction` lists the policies to compare ("auto": none
and four standard ones); the first is the run shown step by step, the cheapest is named. The first policy named
must fit the window; a compared one (or one from "auto") that does not is left out and the notes say why.

Policies of this use case (here and nowhere else): `runs` sampled runs (1 when every size is fixed; one per
session for a trace), seed 0; decode `batch` 32 sessions; survival "best"; host link 51.2e9 B/s (PCIe Gen5 x16,
64e9 B/s per direction, × 0.8 assumed achievable); host memory 0.0095 USD per GB-hour (an upper bound: the whole
AWS m7g.large price, $0.0816/h for 2 vCPU + 8 GiB, us-east-1 On-Demand June 2026,
https://www.factualminds.com/blog/amazon-ec2-on-demand-pricing-instance-families-2026/, charged to its 8.59 GB).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, InstanceOf

from kokuban.agents.compaction import Calls, Policy, build_calls, parse_policy, require_window
from kokuban.agents.scenario import Scenario
from kokuban.core import cost
from kokuban.errors import KokubanError
from kokuban.specs.hardware import PCIE5_X16_BYTES_PER_S, Accelerator
from kokuban.specs.model import ModelSpec
from kokuban.usecases.request import DeploymentRequest, Price, Tokens

DEFAULT_RUNS = 100
DEFAULT_BATCH = 32
#: The host link an offloaded KV crosses: PCIe Gen5 x16 at an assumed 0.8 of its 64 GB/s (copies do not reach peak).
HOST_LINK_BYTES_PER_S = PCIE5_X16_BYTES_PER_S * 0.8
HOST_USD_PER_GB_HOUR = 0.0816 / (8 * 2**30 / 1e9)
SHAPE_FIELDS = ("steps", "system_tokens", "output_tokens", "tool_tokens", "gap_s", "subagents", "subagent_steps")
Spec = Annotated[str, Field(min_length=1, max_length=200)]


def auto_policies(window: int | None, keep_tokens: int = 8000) -> list[str]:
    """The standard comparison: none; every 10 and every 20 steps; at 50 % and 80 % of the window (or of
    200,000 tokens when the window is not known), each down to `keep_tokens`."""
    w = window or 200_000
    return ["none", f"every:10,{keep_tokens}", f"every:20,{keep_tokens}", f"threshold:{w // 2},{keep_tokens}",
            f"threshold:{int(w * 0.8)},{keep_tokens}"]


class AgentRequest(DeploymentRequest):
    """`kokuban agent`: see the module docstring for the sources and the defaults."""

    model: str | InstanceOf[ModelSpec] | None = None
    gpu: str | InstanceOf[Accelerator] | None = None
    preset: str | None = None
    scenario_file: str | None = None
    trace: str | None = None
    steps: Spec | None = None
    system_tokens: Tokens | None = None
    output_tokens: Spec | None = None
    tool_tokens: Spec | None = None
    gap_s: Spec | None = None
    subagents: Annotated[int, Field(ge=0, le=64)] | None = None
    subagent_steps: Spec | None = None
    runs: Annotated[int, Field(gt=0, le=100_000)] | None = None
    seed: Annotated[int, Field(ge=0)] = 0
    compaction: tuple[str, ...] = ("none",)
    price: str | None = None
    price_file: tuple[str, ...] = ()
    cache_retention: Literal["none", "standard", "extended"] = "standard"
    cache_ttl_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    lane: Literal["standard", "batch", "flex", "priority"] = "standard"
    start_utc_hour: Annotated[float, Field(ge=0, lt=24, allow_inf_nan=False)] | None = None
    weekend: bool = False
    batch: Tokens = DEFAULT_BATCH
    survival: Literal["keep", "offload", "drop", "best"] = "best"
    host_link_bytes_per_s: Annotated[float, Field(ge=1e6, le=1e18, allow_inf_nan=False)] = HOST_LINK_BYTES_PER_S
    host_usd_per_gb_hour: Price = HOST_USD_PER_GB_HOUR

    def check(self) -> None:
        sources = [k for k in ("preset", "scenario_file", "trace") if getattr(self, k) is not None]
        if len(sources) > 1:
            raise KokubanError(f"give one scenario source, not {' and '.join(sources)}", field=sources[1])
        if self.trace is not None:
            given = [k for k in SHAPE_FIELDS if getattr(self, k) is not None]
            if given:
                raise KokubanError(
                    "a trace gives every step's sizes; drop the shape fields or the trace", field=given[0]
                )
        elif not sources:
            missing = [
                k
                for k in ("steps", "system_tokens", "output_tokens", "tool_tokens", "gap_s")
                if getattr(self, k) is None
            ]
            if missing:
                raise KokubanError(
                    "is missing: give a preset, a scenario file, a trace, or all of steps, system_tokens, "
                    "output_tokens, tool_tokens and gap_s",
                    field=missing[0],
                )
        api, hosted = self.price is not None, self.model is not None or self.gpu is not None
        if api == hosted:
            raise KokubanError("give price (an API sheet row) or model and gpu (self-hosted), one of the two",
                               field="price" if hosted else "model")
        if hosted and (self.model is None or self.gpu is None):
            raise KokubanError("self-hosted needs both model and gpu", field="gpu" if self.gpu is None else "model")
        if not self.compaction:
            raise KokubanError("needs at least one policy (none, every:M,K, threshold:T,K or auto)", field="compaction")
        for spec in self.compaction:
            if spec != "auto":
                parse_policy(spec)

    @property
    def is_api(self) -> bool:
        return self.price is not None

    def scenario(self) -> Scenario | None:
        """The scenario the fields name (None for a trace)."""
        return None if self.trace is not None else scenario_of(self)


def scenario_of(request: Any, shape_fields: tuple[str, ...] = SHAPE_FIELDS) -> Scenario:
    """The scenario a request's `preset` or `scenario_file`, and its shape fields (which replace the preset's
    values), name."""
    from kokuban.agents.presets import preset, read_scenario

    base: dict[str, Any] = {}
    if request.preset is not None:
        base = preset(request.preset).as_dict()
    elif request.scenario_file is not None:
        base = read_scenario(request.scenario_file).as_dict()
    given = {k: getattr(request, k) for k in shape_fields if getattr(request, k) is not None}
    merged = {k: v for k, v in (base | given).items() if v is not None}
    if given and base:
        merged["assumptions"] = (base.get("assumptions", "") + "; changed here: " +
                                 ", ".join(f"{k}={v}" for k, v in given.items())).lstrip("; ")
    return Scenario.make(**merged)


@dataclass(frozen=True)
class PolicyRun:
    """One compaction policy over every sampled run: the calls, their per-call columns, per-run totals."""

    policy: Policy
    calls: Calls
    columns: dict[str, np.ndarray]
    run_usd: np.ndarray

    def totals(self, key: str) -> np.ndarray:
        """Per-run sums of a per-call column."""
        runs = int(self.run_usd.size)
        return np.bincount(self.calls.run, weights=np.asarray(self.columns[key], dtype=np.float64), minlength=runs)

    def distribution(self) -> dict[str, float]:
        u = self.run_usd
        return {"mean": float(u.mean()), "p50": float(np.percentile(u, 50)), "p90": float(np.percentile(u, 90)),
                "min": float(u.min()), "max": float(u.max())}


def _finite(x: Any) -> Any:
    """A number for JSON: None for inf/NaN (a break-even that never comes)."""
    v = float(x)
    return v if np.isfinite(v) else None


@dataclass(frozen=True)
class AgentResult:
    """What `run_agent` returns. `as_dict()` is the JSON; `steps_frame()` / `runs_frame()` the DataFrames."""

    mode: str  # "api" or "self-hosted"
    source: str
    scenario: Scenario | None
    runs: int
    seed: int
    policies: tuple[PolicyRun, ...]
    terms: dict[str, Any]
    notes: tuple[str, ...] = field(default=())

    @property
    def chosen(self) -> PolicyRun:
        return self.policies[0]

    @property
    def cheapest(self) -> PolicyRun:
        return min(self.policies, key=lambda p: float(p.run_usd.mean()))

    def steps_frame(self, policy: str | None = None, run: int = 0):
        """Per call of one run (sub-agents included): kind, tokens, cache, tier, survival, cost and cumulative cost."""
        import pandas as pd

        pr = next((p for p in self.policies if p.policy.spec == policy), None) if policy else self.chosen
        if pr is None:
            raise KokubanError(
                f"policy '{policy}' was not priced; priced: {', '.join(p.policy.spec for p in self.policies)}",
                field="compaction",
                value=policy,
            )
        mask = pr.calls.run == run
        c = pr.calls.select(mask)
        df = pd.DataFrame({"run": c.run, "child": c.child, "step": c.step,
                           "kind": np.where(c.is_summary, "summary", "step"), "prompt_tokens": c.prompt_tokens,
                           "output_tokens": c.output_tokens, "context_tokens": c.context_tokens,
                           "gap_before_s": c.gap_before_s, "start_s": c.start_s})
        if (c.trace_cached_tokens >= 0).any():
            df["trace_cached_tokens"] = c.trace_cached_tokens
        for k, v in pr.columns.items():
            if k != "output_tokens":
                df[k] = np.asarray(v)[mask]
        df["cumulative_usd"] = df["usd"].cumsum()
        return df

    def runs_frame(self):
        """Per sampled run and policy: USD and token totals."""
        import pandas as pd

        keys = (
            ["input_written_tokens", "input_read_tokens"]
            if self.mode == "api"
            else ["cached_tokens", "recomputed_tokens", "gpu_s"]
        )
        frames = []
        for p in self.policies:
            frame = {
                "policy": p.policy.spec,
                "run": np.arange(self.runs),
                "usd": p.run_usd,
                "calls": np.bincount(p.calls.run, minlength=self.runs),
                "summary_calls": np.bincount(p.calls.run, weights=p.calls.is_summary, minlength=self.runs).astype(int),
                "input_tokens": np.bincount(p.calls.run, weights=p.calls.prompt_tokens, minlength=self.runs),
                "output_tokens": np.bincount(p.calls.run, weights=p.calls.output_tokens, minlength=self.runs),
            }
            frames.append(pd.DataFrame(frame | {k: p.totals(k) for k in keys}))
        return pd.concat(frames, ignore_index=True)

    def _run_max(self, c: Calls) -> np.ndarray:
        """Each run's largest context (prompt + output) over its calls."""
        top = np.zeros(self.runs, dtype=np.int64)
        np.maximum.at(top, c.run, c.context_tokens)
        return top

    def policy_summary(self, p: PolicyRun) -> dict[str, Any]:
        c, col = p.calls, p.columns
        n = self.runs
        out = {"policy": p.policy.spec, "usd": p.distribution(),
               "mean_per_run": {"calls": len(c) / n, "summary_calls": float(c.is_summary.sum()) / n,
                                "input_tokens": float(c.prompt_tokens.sum()) / n,
                                "output_tokens": float(c.output_tokens.sum()) / n,
                                "max_context_tokens": float(self._run_max(c).mean())}}
        if self.mode == "api":
            read, written = float(col["input_read_tokens"].sum()), float(col["input_written_tokens"].sum())
            out["mean_per_run"] |= {"input_written_tokens": written / n, "input_read_tokens": read / n,
                                    "cache_expiries": float(col["cache_expired"].sum()) / n,
                                    "long_tier_calls": float(col["long_context_tier"].sum()) / n,
                                    "off_peak_calls": float(col["off_peak"].sum()) / n}
            out["cache_read_share"] = read / (read + written)
            for k in ("input_written_usd", "input_read_usd", "output_usd"):
                out["mean_per_run"][k] = float(col[k].sum()) / n
        else:
            out["mean_per_run"] |= {k: float(np.asarray(col[k]).sum()) / n for k in (
                "cached_tokens", "recomputed_tokens", "gpu_s", "prefill_s", "decode_s", "hold_s",
                "prefill_usd", "decode_usd", "hold_usd")}
            out["survival_choices"] = {o: int((col["survival"] == o).sum()) for o in ("keep", "offload", "drop")}
        return out

    def step_rows(self) -> list[dict[str, Any]]:
        """Run 0 under the first policy, one dict per call (the JSON's `run`)."""
        df = self.steps_frame()
        rows = []
        for rec in df.to_dict(orient="records"):
            rows.append({k: (_finite(v) if isinstance(v, float) else (v.item() if hasattr(v, "item") else v))
                         for k, v in rec.items()})
        return rows

    def as_dict(self) -> dict[str, Any]:
        c0 = self.chosen
        out: dict[str, Any] = {
            "mode": self.mode, "source": self.source,
            "scenario": self.scenario.as_dict() if self.scenario else None,
            "runs": self.runs, "seed": self.seed, "terms": self.terms,
            "policies": [self.policy_summary(p) for p in self.policies],
            "cheapest_policy": self.cheapest.policy.spec,
            "usd": c0.distribution(),
            "run": self.step_rows(),
            "notes": list(self.notes),
        }
        first = c0.calls.run == 0
        if self.mode == "api":
            long = np.flatnonzero(c0.columns["long_context_tier"][first])
            out["long_tier_from_call"] = int(long[0]) if long.size else None
            out["expired_before_calls"] = np.flatnonzero(c0.columns["cache_expired"][first]).tolist()
        return out


def _price_row(request: AgentRequest):
    from kokuban.prices.sheets import find_price, load_prices

    try:
        rows = load_prices(request.price_file)
    except KokubanError as exc:
        raise KokubanError(exc.reason, field="price_file", value=request.price_file) from None
    try:
        return find_price(request.price, rows)
    except KokubanError as exc:
        raise KokubanError(exc.reason, field="price", value=request.price) from None


def run_agent(request: AgentRequest) -> AgentResult:
    """Price an agent run (see the module docstring). One-line KokubanError naming the field for a bad scenario:
    a negative gap, a context that outgrows the window with no compaction, a TTL on a sheet without a cache."""
    from kokuban.agents import api, selfhost
    from kokuban.agents.presets import example_trace_path
    from kokuban.agents.scenario import read_trace, sample_runs

    r = request
    scenario = r.scenario()
    if scenario is None:
        path = example_trace_path() if r.trace == "example" else r.trace
        families, source = read_trace(path), f"trace {r.trace}"
    else:
        runs = r.runs or (1 if scenario.is_fixed else DEFAULT_RUNS)
        families = sample_runs(scenario, runs, r.seed)
        source = (
            f"preset {r.preset}" if r.preset else (f"scenario file {r.scenario_file}" if r.scenario_file else "fields")
        )
    notes: list[str] = []
    if r.is_api:
        row = _price_row(r)
        cache = api.cache_rules(row, r.cache_retention, r.cache_ttl_s)
        window, what = row.context_window_tokens, row.key
        if window is None:
            notes.append(f"{row.key} states no context window: the run's length is not checked")
        notes += list(cache.notes)
        if r.lane != "standard":
            notes.append(f"{r.lane} lane: every price × {getattr(row, f'{r.lane}_multiplier')}")
        if row.rules.off_peak_multiplier is not None and r.start_utc_hour is None:
            notes.append(
                f"{row.key} bills off-peak hours × {row.rules.off_peak_multiplier:g}; give start_utc_hour to apply it"
            )
        terms = {"price": row.as_dict(), "rules": row.rules.as_dict(), "cache": cache.as_dict(), "lane": r.lane,
                 "start_utc_hour": r.start_utc_hour, "weekend": r.weekend}
    else:
        model = r.model_spec()
        window, what = model.max_context, model.name
        dep = None
        terms = {}
    specs = [s for spec in r.compaction for s in (auto_policies(window) if spec == "auto" else [spec])]
    priced: list[PolicyRun] = []
    first_error: KokubanError | None = None
    for i, spec in enumerate(dict.fromkeys(specs)):
        policy = parse_policy(spec)
        calls = build_calls(families, policy)
        try:
            require_window(calls, window, what, policy)
        except KokubanError as exc:
            if i == 0 and r.compaction[0] != "auto":  # the policy named first must fit
                raise
            first_error = first_error or exc  # a compared one that does not is left out, and the notes say why
            notes.append(f"compaction {spec} left out: {exc.reason}")
            continue
        if r.is_api:
            cols = api.api_costs(calls, row, cache, lane=r.lane, start_utc_hour=r.start_utc_hour, weekday=not r.weekend)
        else:
            if dep is None:
                dep = r.deployment(int(calls.context_tokens.max()))
                terms = selfhost.selfhost_summary_terms(dep, r.batch) | {
                    "survival": r.survival, "host_link_bytes_per_s": r.host_link_bytes_per_s,
                    "host_usd_per_gb_hour": r.host_usd_per_gb_hour}
            cols = selfhost.selfhost_costs(calls, dep, batch=r.batch, survival_policy=r.survival,
                                           host_bytes_per_s=r.host_link_bytes_per_s,
                                           host_usd_per_byte_s=cost.usd_per_byte_s(r.host_usd_per_gb_hour))
        run_usd = np.bincount(calls.run, weights=cols["usd"], minlength=len(families))
        priced.append(PolicyRun(policy, calls, cols, run_usd))
    if not priced:
        raise first_error or KokubanError("no policy to price", field="compaction")
    if scenario is not None and scenario.subagents:
        notes.append(f"each run fans out {scenario.subagents} sub-agent run(s); their cost is in the run's total")
    return AgentResult("api" if r.is_api else "self-hosted", source, scenario, len(families), r.seed, tuple(priced),
                       terms, tuple(notes))


def agent_steps(**fields: Any):
    """Python API: `run_agent(AgentRequest(**fields)).steps_frame()` — one row per call of the first run."""
    return run_agent(AgentRequest(**fields)).steps_frame()
