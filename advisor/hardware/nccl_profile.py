"""`advisor hw import-nccl`: fit nccl-tests output (`nccl_import.py`), check it against the base profile's GPU,
and with -o write a copy of that profile whose collective term for (op, GPUs) is the fit (with the measured
curve), validated by reading it back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError
from advisor.hardware.fit import Fit
from advisor.hardware.nccl_import import NcclTable


@dataclass(frozen=True)
class NcclImport:
    """The table read, its fit, and the `--json` document (`nccl_import.summary`, then `warnings`, then `written`
    when a profile copy was written)."""

    file: Path
    table: NcclTable
    fit: Fit
    doc: dict[str, Any] = field(default_factory=dict)

    @property
    def warnings(self) -> list[str]:
        return list(self.doc["warnings"])


def import_nccl(file: Path, op: str | None, gpus: int | None, base_ref: str | None, output: Path | None
                ) -> NcclImport:
    """Fit `file`; with `base_ref`, warn when the file's device is not the profile's GPU; with `output`, write the
    profile copy (needs `base_ref`)."""
    from advisor.hardware.nccl_import import fit_nccl_file, summary

    if output is not None and base_ref is None:
        raise AdvisorError("-o needs --hw ID (the base profile to copy)")
    table, fit = fit_nccl_file(file, op, gpus)
    doc: dict[str, Any] = summary(table, fit, file)
    warnings: list[str] = []
    if base_ref is not None:
        from advisor.hardware import load_profile
        from advisor.hardware.nccl_import import device_mismatch

        other = device_mismatch(table.device, load_profile(base_ref).gpu.name)
        if other:
            warnings.append(other)
    doc["warnings"] = warnings
    if output is not None:
        assert base_ref is not None
        write_profile_copy(base_ref, output, fit, table, file)
        doc["written"] = str(output)
    return NcclImport(file=file, table=table, fit=fit, doc=doc)


def write_profile_copy(base_ref: str, out: Path, fit: Fit, table: NcclTable, src_file: Path) -> None:
    """A copy of profile `base_ref` at `out` (atomically) with the fitted (op, GPUs) NCCL term in place of its
    own, the measured median curve kept beside the regimes."""
    import numpy as np

    from advisor.files import write_atomic
    from advisor.hardware import load_profile
    from advisor.hardware.dump import profile_to_toml
    from advisor.hardware.fit import median_curve
    from advisor.hardware.load import parse_profile
    from advisor.hardware.placement import group_path

    base = load_profile(base_ref)
    if fit.gpus > base.topology.num_gpus:
        raise AdvisorError(f"{src_file}: {fit.gpus} GPUs but profile {base.id} has {base.topology.num_gpus}")
    sizes, times = median_curve(np.array(table.sizes), np.array(table.times_oop_us))
    term: dict[str, Any] = dict(fit.as_dict())
    term.update(
        backend="nccl", path=group_path(base.topology, list(range(fit.gpus))) or "same_socket",
        measured_bytes=list(sizes), measured_us=list(times),
        source=f"measured curve and regimes fitted to it from nccl-tests output {src_file.name} ({fit.points} "
        "sizes, out-of-place time) by advisor hw import-nccl",
    )
    keep = [c.model_dump() for c in base.collectives
            if not (c.op == fit.op and c.backend == "nccl" and c.gpus == fit.gpus)]
    data = base.model_dump()
    data.update(id=out.stem, name=f"{base.name} (collectives from {src_file.name})", collectives=keep + [term])
    new = type(base).model_validate(data)
    write_atomic(out, profile_to_toml(new, header=f"Copy of {base.id} with {fit.op} x{fit.gpus} terms fitted from "
                                                  f"{src_file.name} (advisor hw import-nccl)."))
    parse_profile(out)
