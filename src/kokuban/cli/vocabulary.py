"""The command line's one vocabulary: one flag per concept, the same on every command.

`TERMS` names each shared concept once: its canonical flag, what it means, its unit and the older spellings
that still parse (hidden from `--help`, so no documented command breaks). The commands declare these options
through `option(FLAG, name, …)`, which takes the spellings from here; a list option (`Term.list`) takes
comma-separated values, and repeating the flag adds more (`--gpu h100,h200` = `--gpu h100 --gpu h200`).
`docs/vocabulary.md` is `markdown_table()` of the whole CLI (`tests/test_vocabulary.py` keeps them equal).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import click

from kokuban.errors import KokubanError


@dataclass(frozen=True)
class Term:
    """One concept of the command line: its `flag`, `meaning`, `unit` and the `aliases` still accepted."""

    flag: str
    meaning: str
    unit: str = ""
    aliases: tuple[str, ...] = ()
    list: bool = False


TERMS: dict[str, Term] = {t.flag: t for t in (
    # token counts: --prompt-tokens / --output-tokens, never a bare --output (a file elsewhere in the ecosystem)
    Term("--prompt-tokens", "Prompt (input) tokens per request; a distribution where the command samples",
         "tokens", ("--prompt",)),
    Term("--output-tokens", "Output (generated) tokens per request (per step for agents); a distribution where "
         "the command samples", "tokens", ("--output",)),
    Term("--input-tokens-per-day", "Input tokens a fleet serves per day (cached included)", "tokens/day",
         ("--input-tokens",)),
    Term("--cached-tokens-per-day", "Of the daily input tokens, those served from the prefix cache", "tokens/day",
         ("--cached-tokens",)),
    Term("--output-tokens-per-day", "Output tokens a fleet serves per day", "tokens/day", ("--output-tokens",)),
    # SLO targets: --METRIC-slo
    Term("--ttft-slo", "Target time to the first token (queueing + prefill)", "s",
         ("--ttft", "--slo-ttft", "--ttft-p99")),
    Term("--tpot-slo", "Target time per output token", "s", ("--tpot", "--tpot-p99")),
    Term("--tps-slo", "Target output tokens/s per user, at least", "tokens/s", ("--slo-tps",)),
    Term("--run-latency-slo", "Target p90 latency of a whole agent run", "s", ("--run-latency-target",)),
    # durations: SECONDS values (500ms, 2s, 1.5min), no unit in the name
    Term("--gap", "Tool/think time between an agent's steps (a number or a distribution)", "s", ("--gap-s",)),
    Term("--cache-ttl", "Prompt-cache lifetime", "s", ("--cache-ttl-s",)),
    Term("--stagger", "Session j starts at j × this", "s", ("--stagger-s",)),
    # input files: one -file suffix
    Term("--price-file", "Extra price sheet file(s) in the bundled prices.toml schema", "path", ("--file",),
         list=True),
    Term("--measurements-file", "Measurements to score or fit: a CSV (docs/calibration.md), a validate.csv or a "
         "TOML in the published schema (calibrate also still reads --csv)", "path", ("--file",)),
    Term("--trace-file", "A request/step trace to replay (CSV or JSONL)", "path", ("--trace",)),
    Term("--preset-file", "An agent workload file (the preset keys)", "path", ("--scenario-file",)),
    Term("--gpu-file", "Extra accelerators (TOML/JSON in the catalog schema, e.g. `kokuban probe --out-file`)",
         "path"),
    Term("--efficiency-file", "Achievable fractions to start from (`kokuban calibrate --out-file`, or its --json)",
         "path"),
    Term("--scenario", "A TOML of this command's option values (defaults the command line overrides)", "path"),
    # outputs
    Term("--out-file", "The file the command makes for another command's -file input (probe: --gpu-file; "
         "calibrate: --efficiency-file)", "path", ("--out",)),
    Term("--out-dir", "Save the run: result.json, command.txt, scenario.toml and the command's CSVs and plots",
         "path"),
    Term("--plot-dir", "Folder for the command's figures", "path", ("--plots",)),
    Term("--csv", "Write the result's rows as CSV", "path"),
    Term("--plot", "Write the result's figure (.png, .svg or .pdf)", "path"),
    Term("--records", "Write one CSV row per simulated request", "path"),
    # hold-out (calibrate)
    Term("--holdout-fraction", "Fraction of rows held out of the fit (by hash of id)", "fraction", ("--holdout",)),
    Term("--holdout-values", "Hold out the rows whose FIELD is one of these values (FIELD=V1,V2)", "",
         ("--hold-out",)),
    # counts, rates and the rest every command words the same way
    Term("--model", "The model where it is not the first argument (validate: the one to run; prices: the open "
         "model whose physics stands in for a price row)", "", ("--stand-in",)),
    Term("--json", "Print JSON (SI units, stable keys) instead of tables", ""),
    Term("--context", "Tokens each request attends to (the KV length of a decode step)", "tokens"),
    Term("--batch", "Requests (sessions) decoded together, or 'max' where the command says", "requests"),
    Term("--min-batch", "Smallest batch of the sweep", "requests"),
    Term("--max-batch", "Largest batch of the sweep (default: the largest that fits)", "requests"),
    Term("--rate", "Requests arriving per second (λ)", "requests/s"),
    Term("--requests", "Number of requests (simulated or priced)", "requests"),
    Term("--speed", "Output tokens/s per user", "tokens/s"),
    Term("--price-per-hour", "USD per accelerator-hour (default: the catalog's typical price)", "USD/h"),
    Term("--system-tokens", "System prompt + tool definitions of an agent run", "tokens"),
    Term("--tool-tokens", "Tool-result tokens added after each agent step (a number or a distribution)", "tokens"),
    Term("--shared-prefix", "Tokens of a shared system prompt prepended to each prompt", "tokens"),
    Term("--seed", "Seed of the sampling or of the held-out split", ""),
    Term("--device", "Where to measure: auto, cpu or cuda", ""),
    Term("--seconds", "Rough time budget of the measurements", "s"),
    Term("--probe-seconds", "Time budget of validate's probe of this machine", "s"),
    Term("--prefill-batch", "Batch of the prefill measurements", "requests"),
    Term("--gpus-per-node", "Accelerators in one node", ""),
    Term("--source", "What calibrate fits: published results or a validate.csv", ""),
    Term("--lane", "Price lane: standard, batch, flex or priority", ""),
    Term("--cache-retention", "Prompt cache: standard (the sheet's), none, or extended (the longer TTL)", ""),
    # lists: comma-separated, or the flag repeated
    Term("--gpu", "Accelerator id (`kokuban gpus`), an id in --gpu-file, or custom:bf16=…,bw=…,mem=…; several "
         "where the command compares", ""),
    Term("--weights", "Weights dtype (bf16 fp16 fp8 int8 int4 fp4; default: the checkpoint's); several where "
         "the command compares", ""),
    Term("--counts", "Accelerator counts to try", "", list=True),
    Term("--layouts", "Layouts to try (tp, ep)", "", list=True),
    Term("--candidates", "Accelerator ids to try", "", list=True),
    Term("--seqs", "max_num_seqs values to try", "", list=True),
    Term("--batches", "Batch sizes to measure", "", list=True),
    Term("--contexts", "Context lengths to measure", "tokens", list=True),
    Term("--prompts", "Prompt lengths to measure", "tokens", list=True),
    Term("--params", "Efficiency fields to fit", "", list=True),
    Term("--api", "Price rows to include (PROVIDER/MODEL)", "", list=True),
    Term("--compaction", "Compaction policy: none, every:M,K, threshold:T,K or auto; several to compare", ""),
)}

_NUMBER = re.compile(r"[-+]?[0-9._]+(?:[eE][-+]?[0-9]+)?(?:[kKmMgG]i?)?")


def split_list(text: str) -> list[str]:
    """`a,b,c` → [a, b, c], keeping a parameterised item whole: a piece continues the item before it when that
    item has a `:` and the piece is a number or a `key=value` (`threshold:100000,8000,auto` → two items,
    `custom:bf16=1e15,bw=3e12,h100` → two)."""
    items: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if items and ":" in items[-1] and ":" not in piece and ("=" in piece or _NUMBER.fullmatch(piece)):
            items[-1] += "," + piece
        else:
            items.append(piece)
    return items


class VocabOption(click.Option):
    """An option whose first spelling is canonical: `--help` and error messages show only it; the others
    (`Term.aliases`) still parse. With `join`, a list option hands the command one comma-separated string."""

    def __init__(self, *args: Any, list_values: bool = False, join: bool = False, **kwargs: Any) -> None:
        self.list_values, self.join = list_values or join, join
        if self.list_values:
            kwargs["multiple"] = True
            if isinstance(kwargs.get("default"), str):
                kwargs["default"] = tuple(split_list(kwargs["default"]))
        super().__init__(*args, **kwargs)

    @property
    def canonical(self) -> str:
        return self.opts[0]

    def get_help_spec(self, ctx: click.Context) -> str:
        opts, self.opts = self.opts, self.opts[:1]
        try:
            return super().get_help_spec(ctx)
        finally:
            self.opts = opts

    def get_help_extra(self, ctx: click.Context) -> Any:
        extra = super().get_help_extra(ctx)
        if self.list_values and isinstance(self.default, tuple) and "default" in extra:
            extra["default"] = ",".join(str(d) for d in self.default)  # as it is written: 1,2,4,8
        return extra

    def get_error_hint(self, ctx: click.Context | None) -> str:
        return f"'{self.canonical}'"

    def type_cast_value(self, ctx: click.Context, value: Any) -> Any:
        if not self.list_values:
            return super().type_cast_value(ctx, value)
        if value is None:
            value = ()
        if isinstance(value, (str, int, float)):
            value = [value]
        items = [item for v in value for item in split_list(str(v))]
        if value and not items:  # given, but empty ('' or ','): not the same as leaving the flag out
            raise KokubanError("needs at least one value (comma-separated, or the flag repeated)", field=self.name,
                               value=str(value[0]) if value else "")
        converted = tuple(self.type.convert(item, self, ctx) for item in items)
        if self.join:
            return ",".join(str(c) for c in converted) if converted else None
        return converted


def option(flag: str, name: str | None = None, *, list_values: bool | None = None, join: bool = False,
           legacy: tuple[str, ...] = (), **kwargs: Any) -> Callable[[Any], Any]:
    """`click.option` for the vocabulary's `flag`: its aliases from `TERMS` (plus this command's `legacy`
    spellings), `name` the Python parameter (the request field), a list (comma-separated or repeated) where
    `Term.list` or `list_values` says so."""
    term = TERMS.get(flag)
    aliases = (term.aliases if term else ()) + legacy
    decls = [flag, *aliases, *([name] if name else [])]
    is_list = bool(term and term.list) if list_values is None else list_values
    if is_list and kwargs.get("help"):
        kwargs["help"] = kwargs["help"].rstrip(".") + " (comma-separated, or repeat the flag)."
    return click.option(*decls, cls=VocabOption, list_values=is_list, join=join, **kwargs)


# ---- the table of every flag (docs/vocabulary.md) --------------------------------------------------------
def leaves(group: click.Group, prefix: str = "") -> Iterable[tuple[str, click.Command]]:
    """Every command under `group` with its path ("prices list"), in name order."""
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from leaves(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", command


def _unit(param: click.Option) -> str:
    return {"TOKENS": "tokens", "SECONDS": "s", "file": "path", "path": "path", "directory": "path"}.get(
        param.type.name, "")


def _meaning(help_text: str) -> str:
    """An option's help without its trailing "(default …)" and full stop."""
    return re.sub(r"\s*\(default[^()]*(?:\([^()]*\)[^()]*)*\)\.?$", "", help_text.strip()).rstrip(".")


def flags(group: click.Group) -> dict[str, dict[str, Any]]:
    """Every option of every command: canonical flag → its aliases, meaning, unit and commands."""
    out: dict[str, dict[str, Any]] = {}
    for path, command in leaves(group):
        for param in command.params:
            if not isinstance(param, click.Option) or param.hidden or not param.opts[0].startswith("--"):
                continue
            flag = param.opts[0]
            term = TERMS.get(flag)
            entry = out.setdefault(flag, {
                "aliases": term.aliases if term else tuple(param.opts[1:]),
                "meaning": term.meaning if term else _meaning(param.help or ""),
                "unit": term.unit if term else _unit(param),
                "list": False,
                "commands": [],
            })
            entry["list"] |= bool(getattr(param, "list_values", False))  # a list on some command (frontier --gpu)
            entry["commands"].append(path)
    return out


def markdown_table(group: click.Group) -> str:
    """docs/vocabulary.md's table: flag | older spellings | meaning | unit | commands."""
    lines = ["| flag | older spellings (still accepted) | meaning | unit | commands |", "|---|---|---|---|---|"]
    every = [path for path, _ in leaves(group)]
    for flag, e in sorted(flags(group).items()):
        missing = [path for path in every if path not in e["commands"]]
        aliases = ", ".join(f"`{a}`" for a in e["aliases"])
        meaning = e["meaning"].replace("|", "\\|") + (" (a list)" if e["list"] else "")
        commands = ("all" if not missing else f"all but {', '.join(missing)}" if len(missing) <= 2
                    else ", ".join(e["commands"]))
        lines.append(f"| `{flag}` | {aliases} | {meaning} | {e['unit']} | {commands} |")
    return "\n".join(lines) + "\n"
