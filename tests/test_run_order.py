"""The run's order: the cells a claim compares are measured back to back, round by round, in a
shuffled order (blockbench.pipeline.run_order)."""

from collections import Counter

import yaml
from conftest import ROOT

from blockbench.pipeline import grid, run_order
from blockbench.pipeline.stages import read_claims
from blockbench.records.layout import Cell

# every claim's CPU parts, C5's block among them (a CPU run measures C5 only with this)
CONFIG = yaml.safe_load((ROOT / "config/config.yaml").read_text()) | {"partial_claims": True}
CLAIMS = read_claims(ROOT / "config/claims/articles")
PLAN = grid.plan(CONFIG, CLAIMS)


def cell(workload: str, impl: str, size: int) -> Cell:
    return Cell("cpu", workload, impl, size)


def test_a_cells_key_is_its_folder_and_reads_back():
    """One spelling of a cell: a round decision's key, a job's or record's fields (a
    wildcard's size is text), and the folder of its processes' files."""
    gpu = Cell("gpu", "matmul", "jax_jit", 1024)
    assert gpu.key == "gpu/matmul/jax_jit/1024" and Cell.from_key(gpu.key) == gpu
    named = {"device": "gpu", "workload": "matmul", "impl": "jax_jit", "size": "1024"}
    assert Cell.from_dict(named) == gpu
    assert gpu.path("lab", 2) == f"results/raw/lab/{gpu.key}/2.json"


def test_the_cells_of_the_cross_cell_claims_share_a_block():
    blocks = run_order.blocks(PLAN, CLAIMS)
    c1 = {blocks[cell("matmul", "jax", 5000)], blocks[cell("matmul", "numpy", 5000)]}  # C1, B3
    c5 = {blocks[cell("selu", "jax", 1000000)], blocks[cell("selu", "numpy", 1000000)]}
    d1 = {blocks[cell("stencil", i, 64)] for i in ("loop", "convolve", "scan")}  # a chain
    assert len(c1) == len(c5) == len(d1) == 1
    assert len(c1 | c5 | d1) == 3
    assert cell("grad_logistic", "grad", 1000) not in blocks  # no claim divides it by another


def test_each_round_runs_every_cell_once_and_a_blocks_cells_back_to_back():
    repeats = 3
    order = run_order.order(PLAN, CLAIMS, dict.fromkeys(PLAN, repeats), seed=0)
    assert len(order) == len(PLAN) * repeats
    sequence = sorted(order, key=lambda job: -order[job][0])
    rounds = [r for _, r in sequence]
    assert rounds == sorted(rounds)  # round 0 entirely before round 1, ...
    positions = {job: i for i, job in enumerate(sequence)}
    blocks = run_order.blocks(PLAN, CLAIMS)
    members: dict[str, list[Cell]] = {}
    for c, name in blocks.items():
        members.setdefault(name, []).append(c)
    orders_seen = set()
    for name, cells in members.items():
        for r in range(repeats):
            at = sorted(positions[(c, r)] for c in cells)
            assert at == list(range(at[0], at[0] + len(cells))), (name, r)
            assert all(order[(c, r)][1] == name for c in cells)
        if len(cells) > 1:
            first = tuple(min(cells, key=lambda c: positions[(c, r)]) for r in range(repeats))
            orders_seen.add(first)
    assert len(orders_seen) > 1  # the order within blocks is shuffled, not fixed


def test_the_order_is_a_function_of_the_seed():
    three = dict.fromkeys(PLAN, 3)
    assert run_order.order(PLAN, CLAIMS, three, 0) == run_order.order(PLAN, CLAIMS, three, 0)
    assert run_order.order(PLAN, CLAIMS, three, 0) != run_order.order(PLAN, CLAIMS, three, 1)


def test_a_cell_with_more_processes_runs_its_extra_rounds_after_every_cells_last():
    settings = grid.settings(CONFIG, CLAIMS)
    repeats = {c: s.repeats for c, s in settings.items()}
    source_a = cell("dot_xx", "jax", 1000)
    c1 = [cell("matmul", "jax", 5000), cell("matmul", "numpy", 5000)]
    c5 = [cell("selu", "jax", 1000000), cell("selu", "numpy", 1000000)]
    # the claims' settings: Source A's JAX cell and C1's products ask for 4, C5's eager SELU
    # and NumPy for 5
    assert repeats[source_a] == 4 and [repeats[c] for c in c1 + c5] == [4, 4, 5, 5]
    assert repeats[cell("matmul", "numpy", 2000)] == CONFIG["repeats"] == 3
    assert sorted(c for c, n in repeats.items() if n > 3) == sorted([source_a, *c1, *c5])
    order = run_order.order(PLAN, CLAIMS, repeats, seed=0)
    assert len(order) == sum(repeats.values())
    last_common = min(order[(c, r)][0] for c, n in repeats.items() for r in range(min(n, 3)))
    extra = [order[(c, r)][0] for c, n in repeats.items() for r in range(3, n)]
    assert len(extra) == 1 + 2 * 1 + 2 * 2
    assert max(extra) < last_common  # rounds 3 and 4 hold only the cells that asked for them


def test_rounds_are_added_to_blocks_and_lone_cells_each_from_its_first_stage():
    """A block's cells share one first stage (the most any asks) and one cap; a lone cell of
    one round takes no more (no spread to size them from)."""
    repeats = {c: 3 for c in PLAN} | {cell("matmul", "jax", 5000): 4}
    units = run_order.units(PLAN, CLAIMS, repeats | {cell("grad_logistic", "grad", 1000): 1}, 12)
    c1 = next(u for u in units.values() if "cpu/matmul/jax/5000" in u["cells"])
    assert sorted(c1["cells"]) == ["cpu/matmul/jax/5000", "cpu/matmul/numpy/5000"]
    assert (c1["first"], c1["most"]) == (4, 12)
    lone = units["cell:cpu/grad_logistic/grad/1000"]
    assert (lone["first"], lone["most"]) == (1, 1)
    assert sorted(k for u in units.values() for k in u["cells"]) == sorted(c.key for c in PLAN)


def test_a_blocks_round_is_one_chain_per_device_in_the_runs_order():
    """Each job of a block's round waits for the one measured before it on its device (a
    cluster runs the chain as one job on one node); lone cells and first cells wait for none."""
    gpu = grid.plan({**CONFIG, "devices": ["cpu", "gpu"]}, CLAIMS)
    order = run_order.order(gpu, CLAIMS, dict.fromkeys(gpu, 2), seed=0)
    chains = run_order.chains(order)
    for after, before in chains.items():
        assert after[1] == before[1] and after[0].device == before[0].device
        assert order[after][1] == order[before][1] != ""  # one block
        assert order[before][0] > order[after][0]  # measured before it
    assert len(set(chains.values())) == len(chains)  # a chain, not a tree
    heads = Counter(
        (block, c.device, r)
        for (c, r), (_, block) in order.items()
        if block and (c, r) not in chains
    )
    assert set(heads.values()) == {1}  # one chain per block, device and round
    d1 = [cell("stencil", i, 64) for i in ("loop", "convolve", "scan")]
    assert sum((c, 0) in chains for c in d1) == 2  # three cells: two links
    assert (cell("grad_logistic", "grad", 1000), 0) not in chains
    assert any(c.device == "gpu" for c, _ in chains)  # GPU cells chained apart


def test_a_job_waits_for_the_last_job_before_it_that_the_run_measures():
    """D1's block in an added round where only convolve / scan needed it: whatever the
    shuffled order, each measured job waits for the measured one before it, and the eager
    loop, which sits the round out, is never waited for (waiting would measure it)."""
    d1 = [cell("stencil", i, 64) for i in ("loop", "convolve", "scan")]
    order = run_order.order(d1, CLAIMS, dict.fromkeys(d1, 12), seed=0)
    chains = run_order.chains(order)
    loop = d1[0]
    takes = lambda c, r: c != loop or r < 3  # noqa: E731
    for r in range(12):
        ranked = sorted((c for c in d1 if takes(c, r)), key=lambda c: -order[(c, r)][0])
        waits = [run_order.before(chains, (c, r), takes) for c in ranked]
        assert waits == [None, *((c, r) for c in ranked[:-1])]
    assert any(chains.get((c, r), (None,))[0] == loop for c in d1 for r in range(3, 12))


def test_a_cell_added_elsewhere_leaves_every_blocks_chains_as_they_were():
    """Chains are inputs of the jobs: a changed one would measure a finished cell again."""
    grown = [*PLAN, cell("selu", "numpy", 77)]
    before = run_order.chains(run_order.order(PLAN, CLAIMS, dict.fromkeys(PLAN, 3), 0))
    after = run_order.chains(run_order.order(grown, CLAIMS, dict.fromkeys(grown, 3), 0))
    assert after == before


def test_a_runs_design_names_its_cells_sampling_as_well_as_its_stopping_rule():
    """blockbench.pipeline.grid.design: a study's runs are of one design only where their cells
    also sample alike; processes that sample for half the time spread otherwise (a run of
    2026-11-25 with `max_time_s` 0.1 took 18 processes more than one with 0.3)."""
    assert CONFIG["sampling"]["max_time_s"] == 0.1
    shorter = {**CONFIG, "sampling": {**CONFIG["sampling"], "max_time_s": 0.05}}

    def first(config):
        return {c: grid.Settings(3, s.sampling) for c, s in grid.settings(config, CLAIMS).items()}

    assert grid.design(CONFIG, first(CONFIG)) == grid.design(dict(CONFIG), first(dict(CONFIG)))
    assert grid.design(shorter, first(shorter)) != grid.design(CONFIG, first(CONFIG))
    assert (
        grid.design(shorter, first(shorter)).split("(")[0]
        == grid.design(CONFIG, first(CONFIG)).split("(")[0]
    )
