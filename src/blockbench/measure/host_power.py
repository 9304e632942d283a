"""The state a host measures in, where the kernel tells it: power source, turbo boost, the
frequency governor of each core a cell may use, and thermal throttling on those cores.

A laptop on battery, with boost off, a power-saving governor or throttling measures another
machine; pyperf's `system show` looks at the same before a run. A cell records the state
before and after its phases (`host_state`), and a state that changes speed becomes one of
its warnings, which the claims report shows beside the verdicts. Where the kernel exposes
none of it (most VMs), every field is None and nothing is claimed.

    blockbench host-check    # the state now, on one screen, before measuring
"""

from collections.abc import Iterable
from pathlib import Path
from typing import Any

SYS = Path("/sys")
# Drivers whose `powersave` governor is the normal, dynamic one (the hardware picks the
# frequency); under acpi-cpufreq and the others it pins the lowest frequency.
DYNAMIC_POWERSAVE = {"intel_pstate", "amd-pstate-epp", "amd-pstate"}
SLOW_GOVERNORS = {"powersave", "conservative", "userspace"}


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def power(root: Path = SYS) -> str | None:
    """'ac', 'battery', or None where the machine reports no power supply (a server, a VM)."""
    supplies = sorted((root / "class/power_supply").glob("*"))
    batteries = [s for s in supplies if _read(s / "type") == "Battery"]
    mains = [s for s in supplies if _read(s / "type") == "Mains"]
    if any(_read(m / "online") == "1" for m in mains):
        return "ac"
    if any(_read(b / "status") == "Discharging" for b in batteries):
        return "battery"
    return "ac" if mains else None


def boost(root: Path = SYS) -> bool | None:
    """Whether the cores may run above their base clock (None: not exposed)."""
    cpu = root / "devices/system/cpu"
    generic = _read(cpu / "cpufreq/boost")
    if generic is not None:
        return generic == "1"
    no_turbo = _read(cpu / "intel_pstate/no_turbo")
    return None if no_turbo is None else no_turbo == "0"


def governors(cores: Iterable[int], root: Path = SYS) -> dict[str, str]:
    """The frequency governor of each of `cores` that has one."""
    found = {}
    for core in cores:
        value = _read(root / f"devices/system/cpu/cpu{core}/cpufreq/scaling_governor")
        if value is not None:
            found[str(core)] = value
    return found


def summary(per_core: dict[str, str]) -> str | None:
    """One word where every core agrees, else each governor with its cores."""
    kinds = sorted(set(per_core.values()))
    if len(kinds) <= 1:
        return kinds[0] if kinds else None
    return "; ".join(f"{k} ({', '.join(c for c, g in per_core.items() if g == k)})" for k in kinds)


def throttle_counts(cores: Iterable[int], root: Path = SYS) -> dict[str, int]:
    """Thermal throttling events so far on each of `cores` (Intel's counters; empty elsewhere)."""
    found = {}
    for core in cores:
        value = _read(root / f"devices/system/cpu/cpu{core}/thermal_throttle/core_throttle_count")
        if value is not None and value.isdigit():
            found[str(core)] = int(value)
    return found


def read(cores: Iterable[int], root: Path = SYS) -> dict[str, Any]:
    cores = list(cores)
    return {
        "power": power(root),
        "boost": boost(root),
        "driver": _read(root / "devices/system/cpu/cpu0/cpufreq/scaling_driver"),
        "governors": governors(cores, root),
        "throttle_counts": throttle_counts(cores, root),
    }


def speed_warnings(before: dict[str, Any], after: dict[str, Any] | None = None) -> list[str]:
    """What in the state changes a cell's speed, each as one warning ('host state: ...')."""
    notes = []
    if "battery" in (before.get("power"), (after or {}).get("power")):
        notes.append("host state: on battery power")
    if before.get("boost") is False:
        notes.append("host state: turbo boost off")
    slow = SLOW_GOVERNORS - ({"powersave"} if before.get("driver") in DYNAMIC_POWERSAVE else set())
    pinned = sorted((c, g) for c, g in before.get("governors", {}).items() if g in slow)
    if pinned:
        cores = ", ".join(f"{c} ({g})" for c, g in pinned)
        notes.append(f"host state: a slow frequency governor on core(s) {cores}")
    if after is not None:
        counts = after.get("throttle_counts", {})
        events = sum(n - before.get("throttle_counts", {}).get(c, n) for c, n in counts.items())
        if events > 0:
            notes.append(f"host state: {events} thermal throttling events during the cell")
    return notes


def describe(state: dict[str, Any]) -> list[str]:
    """The state on one screen, what changes speed last (`blockbench host-check` prints it)."""
    unknown = "not exposed here"
    boost_word = {None: unknown, True: "on", False: "off"}[state["boost"]]
    counts = state["throttle_counts"]
    return [
        f"power: {state['power'] or unknown}",
        f"turbo boost: {boost_word}",
        f"frequency driver: {state['driver'] or unknown}",
        f"governors: {summary(state['governors']) or unknown}",
        f"thermal throttling events so far: {sum(counts.values()) if counts else unknown}",
        *(speed_warnings(state) or ["nothing here is known to change a cell's speed"]),
    ]
