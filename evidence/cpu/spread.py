"""How far the CPU check moves between runs and with the machine's load: each recorded run's validate.csv
(evidence/cpu/runs/<run>/), fitted with the context 4,096 held out, as `kokuban calibrate --source validate-csv
--phase decode --holdout-values context=4096` does, and the held-out median |error| before (textbook fractions) and
after the fit, beside the load average while it was measured (run.json).

    python -m evidence.cpu.spread            # print the table
    bash evidence/cpu/cpu.sh DIR && python -m evidence.cpu.spread --add DIR NAME    # record one more run

The fit is deterministic given a run's rows, so the spread below is the measurements' own: timing noise and the
load of everything else on the two cores.
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

RUNS = Path(__file__).resolve().parent / "runs"


@dataclass(frozen=True)
class Run:
    name: str
    load_before: float
    load_after: float
    seconds: float
    held_out_before: float  # median |error| of the held-out context at the textbook fractions
    held_out_after: float  # the same after the fit on the other contexts


def fitted(folder: Path) -> Run:
    """One recorded run, fitted with context 4,096 held out."""
    from kokuban.usecases.validation import CalibrateRequest, run_calibrate

    meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    cal = run_calibrate(CalibrateRequest(source="validate-csv", csv_path=str(folder / "validate.csv"), phase="decode",
                                         hold_out=("context", (4096,))))
    return Run(folder.name, meta["load_before"], meta["load_after"], meta["seconds"],
               cal.holdout_before["median_abs_error"], cal.holdout_after["median_abs_error"])


def runs() -> list[Run]:
    return [fitted(folder) for folder in sorted(RUNS.iterdir()) if (folder / "run.json").exists()]


def add(out_dir: Path, name: str, load_before: float, load_after: float, seconds: float) -> Path:
    """Keep a `cpu.sh` run's validate.csv under runs/`name` with the load it ran under."""
    folder = RUNS / name
    folder.mkdir(parents=True, exist_ok=False)
    for name in ("validate.csv", "validate.json"):
        shutil.copyfile(out_dir / name, folder / name)
    (folder / "run.json").write_text(json.dumps({"load_before": load_before, "load_after": load_after,
                                                 "seconds": seconds}, indent=1) + "\n", encoding="utf-8")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--add", nargs=2, metavar=("DIR", "NAME"), help="record the cpu.sh run in DIR as NAME")
    parser.add_argument("--load", nargs=2, type=float, metavar=("BEFORE", "AFTER"), default=(0.0, 0.0))
    parser.add_argument("--seconds", type=float, default=0.0)
    args = parser.parse_args()
    if args.add:
        print(add(Path(args.add[0]), args.add[1], *args.load, args.seconds))
    for r in runs():
        print(f"{r.name}: load {r.load_before:.1f}–{r.load_after:.1f}, {r.seconds:.0f} s: held-out context 4,096 "
              f"{100 * r.held_out_before:.1f} % → {100 * r.held_out_after:.1f} %")


if __name__ == "__main__":
    main()
