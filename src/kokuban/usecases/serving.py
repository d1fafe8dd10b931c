"""`serving-accuracy`: kokuban's simulator against public serving benchmarks (data/serving_results.toml), or
against a user's own `vllm bench serve --save-result` files (`validation.serving`).

The request owns the checks: each file is read once here (a file that lacks its setup is refused in one line,
naming the file and the missing field); `refit` fits the engines' overhead terms on the bundled training rows
only, and the held-out rows (or the user's files, which no fit ever sees) are what is reported.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from kokuban.errors import KokubanError
from kokuban.progress import Progress
from kokuban.usecases.request import Dtype, EfficiencyRequest, Name
from kokuban.validation.serving import ServingAccuracy, ServingRow

#: A user's files at most per run: each is one simulated benchmark.
MAX_FILES = 64


class ServingAccuracyRequest(EfficiencyRequest):
    """Score the bundled rows (`files` empty) or `files` (`vllm bench serve --save-result` JSON). What a file
    does not carry comes from `model`, `gpu`, `gpus`, `engine`, `weights` (its own metadata keys win).
    `refit`: fit the overheads on the bundled training rows first. `split`: also report the training side.
    The efficiency fields (`EfficiencyRequest`), when given, set the step model every row is replayed with;
    by default each engine's own (`EngineProfile.base_efficiency`, what its shipped overheads were fitted with)."""

    files: Annotated[tuple[Annotated[str, Field(min_length=1)], ...], Field(max_length=MAX_FILES)] = ()
    refit: bool = False
    split: bool = False
    model: Name | None = None
    gpu: Name | None = None
    gpus: Annotated[int, Field(gt=0, le=4096)] | None = None
    engine: str | None = None
    weights: Dtype | None = None

    @field_validator("files", mode="before")
    @classmethod
    def _files(cls, value):
        return tuple(value) if isinstance(value, list) else value

    def check(self) -> None:
        """Every name given is checked, also where a file's own metadata will win over it."""
        from kokuban.specs.catalog import load_accelerator, load_model

        if self.engine is not None:
            from kokuban.sim.profiles import load_profile

            load_profile(self.engine)
        if self.gpu is not None:
            load_accelerator(self.gpu)
        if self.model is not None:
            load_model(self.model)

    def user_rows(self) -> list[ServingRow]:
        """The files as rows (`validation.serving.read_vllm_bench`), their setup checked against the catalogs."""
        from kokuban.sim.profiles import load_profile
        from kokuban.specs.catalog import load_accelerator, load_model
        from kokuban.validation.serving import read_vllm_bench

        defaults = {"model": self.model, "gpu": self.gpu, "gpus": self.gpus, "engine": self.engine,
                    "weights": self.weights}
        rows = []
        for path in self.files:
            row = read_vllm_bench(path, defaults)
            try:
                load_model(row.model)
                load_accelerator(row.gpu)
                load_profile(row.engine)
            except KokubanError as exc:
                raise KokubanError(f"{path}: {exc.reason}", field="file", value=path) from None
            rows.append(row)
        return rows


def run_serving_accuracy(request: ServingAccuracyRequest, *, progress: Progress | None = None) -> ServingAccuracy:
    """The error by metric and by engine (`validation.serving.serving_accuracy`): the bundled rows split by
    hash of id, or the request's files, all of them held out. `progress(done, total)` follows the refit's grid
    search (when asked for), then the rows replayed."""
    from kokuban.validation.serving import fit_overheads, load_serving_results, serving_accuracy, split

    eff = request.efficiency_spec() if request.efficiency_given() else None  # None: each engine's own
    if not request.files:
        return serving_accuracy(refit=request.refit, efficiency=eff, progress=progress)
    rows = request.user_rows()
    if not request.refit:
        return serving_accuracy(rows, split_rows=False, efficiency=eff, progress=progress)
    bundled = load_serving_results()
    fit = fit_overheads([r for r, held in zip(bundled, split(bundled), strict=True) if not held], eff,
                        progress=progress)
    return serving_accuracy(rows, split_rows=False, fit=fit, efficiency=eff, progress=progress)
