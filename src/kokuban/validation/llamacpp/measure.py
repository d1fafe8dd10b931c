"""The measurement: write, quantize and benchmark every case × type of a plan (`measure`), or each test on its
own when the machine is quiet (`measure_clean`); records merged over passes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from kokuban.errors import KokubanError
from kokuban.validation.llamacpp.gguf_files import gguf_bytes, write_gguf
from kokuban.validation.llamacpp.machine_load import load_average, run_watched, wait_for_quiet
from kokuban.validation.llamacpp.parsing import BatchedTest, parse_batched_bench, parse_llama_bench_json
from kokuban.validation.llamacpp.plan import Plan
from kokuban.validation.llamacpp.rows import row_dict, row_from_dict, rows_from_batched, rows_from_bench
from kokuban.validation.llamacpp.tools import batched_command, bench_command, quantize, run_tool


def run_batched(tools: dict[str, Path], model: Path, plan: Plan, attempts: int = 4) -> tuple[list[BatchedTest], list]:
    """llama-batched-bench over `plan.batched_batches`, rerunning the batch sizes whose row did not come out.

    Its results are printed through llama.cpp's asynchronous logger, which on this machine sometimes exits before
    printing every row (1 of 3 runs of the same command printed 0 of 2 rows); a missing row is measured again, up to
    `attempts` runs, and left out if it never appears."""
    tests: list[BatchedTest] = []
    cmds = []
    missing = list(plan.batched_batches)
    for _ in range(attempts):
        cmd = batched_command(tools, model, prompt=plan.batched_prompt, gen=plan.batched_gen, batches=missing,
                              threads=plan.threads)
        cmds.append(cmd)
        try:
            got = parse_batched_bench(run_tool(cmd))
        except KokubanError:
            got = []
        tests += [t for t in got if t.batch in missing]
        missing = [b for b in missing if b not in {t.batch for t in got}]
        if not missing:
            break
    return sorted(tests, key=lambda t: t.batch), cmds


def merge_records(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two passes of `measure` over the same plan as one record: each row's samples are the two passes' together
    (a second pass at another time spreads the machine's busy spells over the rows); runs are listed in order."""
    rows = {r["id"]: dict(r) for r in first["rows"]}
    for r in second["rows"]:
        if r["id"] in rows:
            rows[r["id"]]["samples_s"] = list(rows[r["id"]]["samples_s"]) + list(r["samples_s"])
        else:
            rows[r["id"]] = dict(r)
    merged = [row_dict(row_from_dict(r)) for r in rows.values()]
    return {**first, "rows": merged, "runs": first["runs"] + second["runs"], "passes": passes(first) + passes(second)}


def passes(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The passes a record holds: date, repetitions per llama-bench test and batched-bench runs of each."""
    return record.get("passes") or [{"date": record["date"], "repeats": record["plan"]["repeats"],
                                     "batched_runs": record["plan"]["batched_runs"]}]


def measure(plan: Plan, tools: dict[str, Path], work_dir: str | Path, *,
            save: Callable[[dict[str, Any]], None] | None = None,
            log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Write, quantize and benchmark every case × type of `plan`; the raw record (rows, commands, files, loads).

    `save(record)` is called after every (case, type) so that an interrupted run keeps what it measured."""
    import datetime
    import platform

    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    say = log or (lambda _msg: None)
    record: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
        "cpu": platform.processor() or platform.machine(), "tools": {k: str(v) for k, v in tools.items()},
        "plan": asdict(plan), "cases": {}, "runs": [], "rows": [],
    }
    for case in plan.cases:
        cfg, changes = case.config()
        f16 = work / f"{case.name}-F16.gguf"
        if not f16.exists():
            say(f"writing {f16.name}")
            write_gguf(cfg, f16, name=case.name)
        record["cases"][case.name] = {**asdict(case), "config": cfg, "scaled": changes, "files": {}}
        for gguf_type in plan.types:
            path = f16 if gguf_type == "F16" else work / f"{case.name}-{gguf_type}.gguf"
            if not path.exists():
                say(f"quantizing {path.name}")
                quantize(tools, f16, path, gguf_type, plan.threads)
            record["cases"][case.name]["files"][gguf_type] = {"path": str(path), **gguf_bytes(path)}
            cmd = bench_command(tools, path, prompts=plan.prompts, gens=plan.gens, depths=plan.depths,
                                repeats=plan.repeats, threads=plan.threads)
            say(f"llama-bench {case.name} {gguf_type}")
            before = load_average()
            tests = parse_llama_bench_json(run_tool(cmd))
            record["runs"].append({"case": case.name, "type": gguf_type, "command": cmd, "load_before": before,
                                   "load_after": load_average(),
                                   "build_commit": tests[0].build_commit if tests else ""})
            record["rows"] += [row_dict(r) for r in rows_from_bench(case.name, gguf_type, tests)]
            if case.batched:
                runs = []
                for _ in range(plan.batched_runs):
                    say(f"llama-batched-bench {case.name} {gguf_type}")
                    before = load_average()
                    tests, cmds = run_batched(tools, path, plan)
                    runs.append(tests)
                    record["runs"].append({"case": case.name, "type": gguf_type, "commands": cmds,
                                           "load_before": before, "load_after": load_average()})
                record["rows"] += [row_dict(r) for r in rows_from_batched(case.name, gguf_type, runs)]
            if save:
                save(record)
    return record


def measure_clean(plan: Plan, tools: dict[str, Path], work_dir: str | Path, *, budget_s: float,
                  max_others: float = 0.15, save: Callable[[dict[str, Any]], None] | None = None,
                  log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Like `measure`, but each llama-bench test (one prompt or generation length at one depth) is its own run,
    started when the machine is quiet, and its repetitions are kept only when other processes used fewer than
    `max_others` cores on average during it; a disturbed test is run again in a later round, until every test has
    one undisturbed run or `budget_s` seconds have passed. Every attempt is recorded (command, wall, others' cores).
    """
    import datetime
    import platform
    import time

    say = log or (lambda _msg: None)
    work = Path(work_dir)
    record = measure(replace(plan, types=()), tools, work, log=log)  # models and files only (no benchmarks)
    record.update(date=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                  machine=platform.platform(), plan=asdict(plan), method="clean", max_others_cores=max_others,
                  attempts=[], rows=[])
    pending = []
    for case in plan.cases:
        for gguf_type in plan.types:
            f16 = work / f"{case.name}-F16.gguf"
            path = f16 if gguf_type == "F16" else work / f"{case.name}-{gguf_type}.gguf"
            if not path.exists():
                say(f"quantizing {path.name}")
                quantize(tools, f16, path, gguf_type, plan.threads)
            record["cases"][case.name]["files"][gguf_type] = {"path": str(path), **gguf_bytes(path)}
            for depth in plan.depths:
                for p in plan.prompts:
                    pending.append((case.name, gguf_type, path, "pp", p, depth))
                for n in plan.gens:
                    pending.append((case.name, gguf_type, path, "tg", n, depth))
            if case.batched:
                pending.append((case.name, gguf_type, path, "batched", 0, 0))
    pending.sort(key=lambda item: plan.types.index(item[1]))  # every case of a type before the next type
    start, rounds = time.monotonic(), 0
    while pending and time.monotonic() - start < budget_s:
        rounds += 1
        still = []
        for item in pending:
            if time.monotonic() - start > budget_s:
                still.append(item)
                continue
            name, gguf_type, path, kind, n, depth = item
            quiet = wait_for_quiet(max_others, timeout_s=20)
            if kind == "batched":
                cmd = batched_command(tools, path, prompt=plan.batched_prompt, gen=plan.batched_gen,
                                      batches=plan.batched_batches, threads=plan.threads)
            else:
                cmd = bench_command(tools, path, prompts=[n if kind == "pp" else 0], gens=[n if kind == "tg" else 0],
                                    depths=[depth], repeats=plan.repeats, threads=plan.threads)
            out, wall, others = run_watched(cmd)
            clean = others <= max_others
            if clean and kind == "batched":
                try:
                    batched = parse_batched_bench(out)
                except KokubanError:  # the asynchronous logger printed no row (see run_batched)
                    batched, clean = [], False
            record["attempts"].append({"case": name, "type": gguf_type, "test": f"{kind}{n}@d{depth}", "round": rounds,
                                       "command": cmd, "wall_s": wall, "others_cores": others,
                                       "quiet_before_cores": quiet, "kept": clean})
            say(f"{name} {gguf_type} {kind}{n}@d{depth}: {wall:.1f} s, others {others:.2f} cores"
                + ("" if clean else " — disturbed, again later"))
            if not clean:
                still.append(item)
                continue
            if kind == "batched":
                record["rows"] += [row_dict(r) for r in rows_from_batched(name, gguf_type, [batched])]
            else:
                record["rows"] += [row_dict(r) for r in rows_from_bench(name, gguf_type, parse_llama_bench_json(out))]
            if save:
                save(record)
        pending = still
    record["not_measured"] = [f"{n}/{t}/{k}{x}@d{d}" for n, t, _p, k, x, d in pending]
    record["rounds"] = rounds
    if save:
        save(record)
    return record
