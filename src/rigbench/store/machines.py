"""A run's machine fingerprint as stored (rigbench.fingerprint): the types of the fields that
reports and tables read from it, checked where a fingerprint comes in and again where one is
read.

A fingerprint comes from another machine's bundle or from a row written before this check (or
edited by hand), and `gpus: "x"` or `cpu_model: ["a"]` once imported fine and then broke
`report` and `results show` over the whole database. An import refuses such a fingerprint,
naming the field (`machine_problem`); reading keeps what is readable (`read_machine`): a field
of the wrong type is left out, a fingerprint that is not a JSON object is read as `{}` (not
recorded), each with one warning naming the run. Fields no code reads are kept as they are.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rigbench.errors import field_path
from rigbench.numlimits import Int64

log = logging.getLogger("rigbench.store")

_READ = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)


class GpuFields(BaseModel):
    """One GPU of `gpus`, as far as it is read (name, memory, driver)."""

    model_config = _READ

    name: str | None = None
    memory_bytes: Int64 | None = None
    driver: str | None = None


class MachineFields(BaseModel):
    """The read fields of a fingerprint (fingerprint.FINGERPRINT_KEYS; `cpu_flags` is read
    leniently where it is used, fingerprint._key_flags_of)."""

    model_config = _READ

    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    python_version: str | None = None
    python_implementation: str | None = None
    cpu_model: str | None = None
    cpu_arch: str | None = None
    cpu_flags_hash: str | None = None
    cpu_cores_physical: Int64 | None = None
    cpu_cores_logical: Int64 | None = None
    cpu_cores_usable: Int64 | None = None
    cpu_max_mhz: float | None = None
    ram_bytes: Int64 | None = None
    gpus: list[GpuFields] | None = None
    packages: dict[str, str | None] | None = None


def _errors(machine: dict[str, Any]) -> list[tuple[str, str]]:
    """(field path, why) for each field of `machine` of the wrong type, in field order."""
    try:
        MachineFields.model_validate(machine)
    except ValidationError as exc:
        return [(field_path(e["loc"]), e["msg"]) for e in exc.errors()]
    return []


def machine_problem(machine: dict[str, Any]) -> str | None:
    """The first field of `machine` of the wrong type, e.g. "gpus: Input should be a valid
    list", or None."""
    found = _errors(machine)
    return f"{found[0][0]}: {found[0][1]}" if found else None


def read_machine(text: str | None, run_id: str, url: str) -> dict[str, Any]:
    """A stored `machine_json` as a dict: `{}` when it is not a JSON object, without the
    fields of the wrong type otherwise; each with one warning naming the run in `url`."""
    try:
        machine = json.loads(text) if text else {}
    except (ValueError, TypeError) as exc:
        machine, why = None, f"not JSON: {' '.join(str(exc).split())[:120]}"
    else:
        why = "not a JSON object"
    if not isinstance(machine, dict):
        log.warning("run %s in %s: its machine fingerprint cannot be read (%s); shown as not recorded",
                    run_id, url, why)
        return {}
    found = _errors(machine)
    if not found:
        return machine
    bad = list(dict.fromkeys(path.split(".")[0].split("[")[0] for path, _ in found))
    log.warning("run %s in %s: left out machine field(s) of the wrong type: %s (%s)",
                run_id, url, ", ".join(bad), f"{found[0][0]}: {found[0][1]}")
    return {k: v for k, v in machine.items() if k not in bad}
