"""The GPU-sharing placement study (clustersim/sharing.py, docs/fgd-fidelity.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim import sharing
from clustersim.errors import ClustersimError


def pod(name: str, cpu: int, gpus: int = 0, milli: int = 0, mem: int = 1000, spec: str = ""):
    return (name, cpu, mem, gpus, milli, spec, 0.0)


# --------------------------------------------------------------------------- fragmentation


def test_typical_pods_take_the_frequent_shapes_and_renormalise() -> None:
    pods = sharing.make_pods(
        [
            pod("p1", 1000, 1, 500),
            pod("p2", 1000, 1, 500, mem=7),  # memory is not part of a shape
            pod("p3", 2000, 1, 1000),
            pod("p4", 1000),
        ]
    )
    t = sharing.typical_pods(pods)
    # A (2 of 4), then the two singles, the larger CPU first
    assert t.cpu.tolist() == [1000, 2000, 1000]
    assert t.milli.tolist() == [500, 1000, 0]
    assert t.prob.tolist() == [0.5, 0.25, 0.25]
    # covering 50 % needs the first shape only, renormalised to 1
    half = sharing.typical_pods(pods, coverage=0.5)
    assert half.milli.tolist() == [500]
    assert half.prob.tolist() == [1.0]


def test_fragmentation_of_two_nodes_worked_by_hand() -> None:
    # typical pods: A = 1 CPU + 500 milli (p 0.5), B = 2 CPUs + 1 GPU (p 0.25), C = 1 CPU only
    typical = sharing.typical_pods(
        sharing.make_pods(
            [
                pod("a1", 1000, 1, 500),
                pod("a2", 1000, 1, 500),
                pod("b", 2000, 1, 1000),
                pod("c", 1000),
            ]
        )
    )
    nodes = sharing.make_nodes([("x", 8000, 10**6, 2, "T4"), ("y", 8000, 10**6, 1, "T4")])
    gpu_left = np.array([[1000, 300], [400, 0]], dtype=np.int64)
    cpu_left = np.array([4000, 500], dtype=np.int64)
    frag = sharing.node_frags(nodes, typical, gpu_left, cpu_left)
    # x, idle 1300: A fits the free GPU, so only the 300 left on the other counts: 0.5 * 300;
    # B likewise: 0.25 * 300; C asks for no GPU, so all idle counts: 0.25 * 1300.
    # y, idle 400: A does not fit (400 < 500): 0.5 * 400; B neither (no full GPU, and only
    # 500 milli-CPU): 0.25 * 400; C: 0.25 * 400.
    assert frag.tolist() == pytest.approx([150 + 75 + 325, 200 + 100 + 100])
    # the cluster's fragmentation rate: fragmented over idle milli
    assert frag.sum() / (1300 + 400) == pytest.approx(950 / 1700)


def test_a_model_the_typical_pod_refuses_counts_all_idle_milli() -> None:
    typical = sharing.typical_pods(sharing.make_pods([pod("a", 1000, 1, 500, spec="V100M32")]))
    nodes = sharing.make_nodes([("t4", 8000, 10**6, 2, "T4"), ("v", 8000, 10**6, 2, "V100M32")])
    gl = np.array([[1000, 200], [1000, 200]], dtype=np.int64)
    frag = sharing.node_frags(nodes, typical, gl, np.array([8000, 8000], dtype=np.int64))
    assert frag.tolist() == [1200.0, 200.0]


def test_the_placement_records_the_fragmentation_after_each_pod() -> None:
    nodes = sharing.make_nodes([("x", 8000, 10**6, 2, "T4")])
    pods = sharing.make_pods([pod("p1", 1000, 1, 700), pod("p2", 1000, 1, 500)])
    run = sharing.place(nodes, pods, "best-fit", compiled=False)
    # typical: p2's shape and p1's (0.5 each); after p1 the node has [300, 1000] left:
    # 500 fits the free GPU (300 fragmented), 700 too (300): 300; idle 1300
    assert run.fragmented[0] == pytest.approx(300.0)
    assert run.idle.tolist() == [1300, 800]
    # after p2 (best fit: the free GPU, the 300 one is too small) [300, 500]: 500 fits GPU 1
    # (300 fragmented, p 0.5), 700 fits nowhere (all 800, p 0.5)
    assert run.fragmented[1] == pytest.approx(0.5 * 300 + 0.5 * 800)
    assert run.frag_rate()[1] == pytest.approx(550 / 800)


# --------------------------------------------------------------------------- choices by hand


def two_nodes() -> sharing.Nodes:
    # a: 2 GPUs, b: 1 GPU; same CPU and memory
    return sharing.make_nodes([("a", 16000, 64000, 2, "T4"), ("b", 16000, 64000, 1, "T4")])


def two_shares() -> sharing.Pods:
    return sharing.make_pods([pod("p1", 1000, 1, 300), pod("p2", 1000, 1, 500)])


@pytest.mark.parametrize(
    ("placement", "nodes", "masks"),
    [
        # best-fit, p1: a 1 - (15000/128000 + 1700/8000)/2 = 0.835 -> 83, b 0.898 -> 89;
        # p2: a 0.848 -> 84, b 1 - (14000/128000 + 200/8000)/2 = 0.933 -> 93
        ("best-fit", ["b", "b"], [1, 1]),
        # packing, p1: a all free, max(33 - 2, 2) = 31, b max(33 - 1, 1) = 32;
        # p2: a 31, b shares its used GPU (700 left): 100 - (70 // 10) = 93
        ("gpu-packing", ["b", "b"], [1, 1]),
        # clustering, p1: a 25 * 6000 // 8000 + 25 = 43, b 25 * 7000 // 8000 + 25 = 46;
        # p2: b holds only shares: 25 * 7300 // 8000 + 75 = 97
        ("gpu-clustering", ["b", "b"], [1, 1]),
        # dot-product: 1 - d/2 truncates to 99 on both nodes for both pods: the first name, a;
        # p2 goes to a's tighter GPU (700 left)
        ("dot-product", ["a", "a"], [1, 1]),
        # FGD (typical: the two shapes, 0.5 each): p1 leaves no fragment anywhere (score 50),
        # a by name; p2 on a's GPU 0 would leave 200 that neither shape fits (F 200, score
        # int(100 sigmoid(-0.2)) = 45), on GPU 1 nothing (50), on b nothing (50): a, GPU 1
        ("fgd", ["a", "a"], [1, 2]),
    ],
)
def test_each_placement_chooses_as_worked_by_hand(
    placement: str, nodes: list[str], masks: list[int]
) -> None:
    run = sharing.place(two_nodes(), two_shares(), placement, compiled=False)
    assert [run.nodes.names[n] for n in run.node] == nodes
    assert run.gpu_mask.tolist() == masks


def test_fgd_score_is_a_truncated_sigmoid_of_the_fragment_removed() -> None:
    assert sharing._fgd_score(0.0, 0.0) == 50
    assert sharing._fgd_score(0.0, 200.0) == 45  # 100 / (1 + e^0.2) = 45.02
    assert sharing._fgd_score(1000.0, 0.0) == 73  # 100 / (1 + e^-1) = 73.1


def test_whole_gpus_are_the_first_free_ones_and_a_pod_too_big_fails() -> None:
    nodes = sharing.make_nodes([("a", 16000, 64000, 4, "T4")])
    pods = sharing.make_pods(
        [pod("s", 1000, 1, 300), pod("w", 1000, 2, 1000), pod("big", 1000, 2, 1000)]
    )
    run = sharing.place(nodes, pods, "best-fit", compiled=False)
    # the share takes GPU 0; two whole GPUs: 1 and 2; then only GPU 3 is free
    assert run.gpu_mask.tolist() == [0b1, 0b110, 0]
    assert run.node.tolist() == [0, 0, -1]
    assert run.first_failure == 2
    assert run.allocated_share(1) == pytest.approx(2300 / 4000)
    assert run.summary()["allocated_share_at_first_failure"] == pytest.approx(2300 / 4000)


def test_gpu_spec_keeps_a_pod_off_other_models() -> None:
    nodes = sharing.make_nodes([("a", 16000, 64000, 1, "T4"), ("b", 16000, 64000, 1, "P100")])
    pods = sharing.make_pods([pod("p", 1000, 1, 1000, spec="P100|V100M32")])
    for placement in sharing.PLACEMENTS:
        run = sharing.place(nodes, pods, placement, compiled=False)
        assert run.node.tolist() == [1], placement


# --------------------------------------------------------------------------- invariants


@st.composite
def clusters(draw: st.DrawFn) -> tuple[sharing.Nodes, sharing.Pods]:
    n_nodes = draw(st.integers(1, 4))
    nodes = sharing.make_nodes(
        [
            (
                f"n{i}",
                draw(st.sampled_from([2000, 8000, 32000])),
                draw(st.sampled_from([4000, 64000])),
                draw(st.sampled_from([1, 2, 4, 8])),
                draw(st.sampled_from(["T4", "P100"])),
            )
            for i in range(n_nodes)
        ]
    )
    rows = []
    for k in range(draw(st.integers(1, 25))):
        kind = draw(st.integers(0, 2))
        gpus, milli = (0, 0) if kind == 0 else (1, draw(st.integers(1, 999)))
        if kind == 2:
            gpus, milli = draw(st.sampled_from([1, 2, 4, 8])), 1000
        rows.append(
            pod(
                f"p{k:02d}",
                draw(st.sampled_from([500, 1000, 4000])),
                gpus,
                milli,
                mem=draw(st.sampled_from([0, 1000, 16000])),
                spec=draw(st.sampled_from(["", "", "T4", "P100|T4"])),
            )
        )
    return nodes, sharing.make_pods(rows)


@settings(max_examples=60, deadline=None)
@given(case=clusters(), placement=st.sampled_from(sharing.PLACEMENTS))
def test_no_gpu_cpu_or_memory_is_ever_over_committed(
    case: tuple[sharing.Nodes, sharing.Pods], placement: str
) -> None:
    nodes, pods = case
    run = sharing.place(nodes, pods, placement, seed=3, compiled=False)
    used = np.zeros((len(nodes), 8), dtype=np.int64)
    cpu = np.zeros(len(nodes), dtype=np.int64)
    mem = np.zeros(len(nodes), dtype=np.int64)
    for k, n in enumerate(run.node.tolist()):
        if n < 0:
            assert run.gpu_mask[k] == 0
            continue
        cpu[n] += pods.cpu[k]
        mem[n] += pods.mem[k]
        gpus = [i for i in range(8) if run.gpu_mask[k] >> i & 1]
        assert len(gpus) == pods.gpus[k]
        assert all(i < nodes.gpus[n] for i in gpus)
        for i in gpus:
            used[n, i] += pods.milli[k]
    assert (used <= 1000).all()
    assert (cpu <= nodes.cpu).all()
    assert (mem <= nodes.mem).all()
    # the books agree with the placements
    assert (run.cpu_left == nodes.cpu - cpu).all()
    assert int(run.allocated[-1]) == int(used.sum())


@settings(max_examples=25, deadline=None)
@given(case=clusters(), placement=st.sampled_from(sharing.PLACEMENTS))
def test_compiled_and_plain_kernels_agree(
    case: tuple[sharing.Nodes, sharing.Pods], placement: str
) -> None:
    nodes, pods = case
    plain = sharing.place(nodes, pods, placement, seed=5, compiled=False)
    fast = sharing.place(nodes, pods, placement, seed=5, compiled=True)
    assert plain.node.tolist() == fast.node.tolist()
    assert plain.gpu_mask.tolist() == fast.gpu_mask.tolist()
    assert np.allclose(plain.fragmented, fast.fragmented)


def test_runs_are_deterministic_per_seed() -> None:
    nodes = sharing.make_nodes([(f"n{i}", 32000, 10**6, 4, "T4") for i in range(6)])
    pods = sharing.make_pods([pod(f"p{i:02d}", 1000, 1, 250) for i in range(30)])
    a = sharing.place(nodes, pods, "random-fit", seed=7, compiled=False)
    b = sharing.place(nodes, pods, "random-fit", seed=7, compiled=False)
    c = sharing.place(nodes, pods, "random-fit", seed=8, compiled=False)
    assert a.node.tolist() == b.node.tolist()
    assert a.gpu_mask.tolist() == b.gpu_mask.tolist()
    assert (a.node.tolist(), a.gpu_mask.tolist()) != (c.node.tolist(), c.gpu_mask.tolist())
    s1 = sharing.inflation_order(pods, nodes.total_gpu_milli, seed=1)
    s2 = sharing.inflation_order(pods, nodes.total_gpu_milli, seed=1)
    assert s1.names == s2.names


def test_inflation_tops_the_workload_up_to_the_tune_ratio() -> None:
    pods = sharing.make_pods([pod(f"p{i}", 1000, 1, 1000) for i in range(4)])
    seq = sharing.inflation_order(pods, capacity_milli=10_000, seed=0, tune=1.3)
    # 4 GPUs asked for; whole-GPU pods are added while the total stays within 13 GPUs
    assert int(seq.gpu_milli_total.sum()) == 13_000
    assert sorted(seq.names[:4]) == ["p0", "p1", "p2", "p3"]
    down = sharing.inflation_order(pods, capacity_milli=2_000, seed=0, tune=1.0)
    assert int(down.gpu_milli_total.sum()) == 2_000


def test_malformed_requests_are_dropped_and_counted() -> None:
    pods = sharing.make_pods(
        [
            pod("ok", 1000, 1, 500),
            pod("neg", -1, 1, 500),
            pod("big", 1000, 1, 1500),
            pod("multi-share", 1000, 2, 500),
            pod("no-milli", 1000, 1, 0),
        ]
    )
    assert pods.names == ("ok",)
    assert pods.dropped == {
        "negative request": 1,
        "gpu_milli above 1000": 1,
        "share of more than one GPU": 1,
        "num_gpu without gpu_milli": 1,
    }


def test_an_unknown_placement_is_an_error() -> None:
    with pytest.raises(ClustersimError, match="unknown placement"):
        sharing.place(two_nodes(), two_shares(), "worst-fit")


# --------------------------------------------------------------------------- FGD restated


def restated_fgd(
    nodes: sharing.Nodes, pods: sharing.Pods, typical: sharing.Typical
) -> list[tuple[int, int]]:
    """The reference's FGD, restated the way its code is organised: a node is a CPU left and
    a list of milli left per GPU; a node's fragment is summed per class (q1 lack both, q2 lack
    GPU, q3 satisfied, q4 lack CPU, xl/xr CPU-only satisfied/lacking CPU, no access), and
    the score is the sigmoid of the fragment removed, over 1000, times 100, truncated; a
    share tries each GPU; ties go to the first node by name."""
    state = [
        {"cpu": int(nodes.cpu[i]), "mem": int(nodes.mem[i]), "gpus": [1000] * int(nodes.gpus[i])}
        for i in range(len(nodes))
    ]
    model = [nodes.models[m] if m >= 0 else "" for m in nodes.model.tolist()]

    def classes(cpu: int, gpus: list[int], n: int) -> dict[str, float]:
        out = dict.fromkeys(["q1", "q2", "q3", "q4", "xl", "xr", "na"], 0.0)
        idle = sum(gpus)
        for t in range(len(typical)):
            tc, tm, tg, ts, p = (
                int(typical.cpu[t]),
                int(typical.milli[t]),
                int(typical.gpus[t]),
                typical.spec[t],
                float(typical.prob[t]),
            )
            if tm == 0:
                out["xl" if cpu >= tc else "xr"] += p * idle
            elif not sharing.accessible(ts, model[n]):
                out["na"] += p * idle
            elif sum(1 for g in gpus if g >= tm) >= tg:
                if cpu >= tc:
                    small = sum(g for g in gpus if g < tm)
                    out["q2"] += p * small
                    out["q3"] += p * (idle - small)
                else:
                    out["q4"] += p * idle
            else:
                out["q2" if cpu >= tc else "q1"] += p * idle
        return out

    def frag(cpu: int, gpus: list[int], n: int) -> float:
        return sum(v for k, v in classes(cpu, gpus, n).items() if k != "q3")

    def score(before: float, after: float) -> int:
        return int(1.0 / (1.0 + math.exp(-(before - after) / 1000)) * 100)

    out = []
    for k in range(len(pods)):
        cpu, mem, want, milli = (int(x[k]) for x in (pods.cpu, pods.mem, pods.gpus, pods.milli))
        best: tuple[int, int, int] | None = None  # score, node, gpu
        for n, s in enumerate(state):
            if s["cpu"] < cpu or s["mem"] < mem:
                continue
            if milli > 0 and (
                not s["gpus"]
                or not sharing.accessible(pods.spec[k], model[n])
                or sum(1 for g in s["gpus"] if g >= milli) < want
            ):
                continue
            before = frag(s["cpu"], s["gpus"], n)
            if want == 1 and milli < 1000:
                cand = None
                for i, g in enumerate(s["gpus"]):
                    if g >= milli:
                        after_gpus = list(s["gpus"])
                        after_gpus[i] -= milli
                        sc = score(before, frag(s["cpu"] - cpu, after_gpus, n))
                        if cand is None or sc > cand[0]:
                            cand = (sc, i)
                assert cand is not None
                sc, gpu = cand
            else:
                after_gpus = list(s["gpus"])
                left = want
                for i, g in enumerate(after_gpus):
                    if left and g == 1000:
                        after_gpus[i] = 0
                        left -= 1
                sc, gpu = score(before, frag(s["cpu"] - cpu, after_gpus, n)), -1
            if best is None or sc > best[0]:
                best = (sc, n, gpu)
        if best is None:
            out.append((-1, 0))
            continue
        _, n, gpu = best
        s = state[n]
        s["cpu"] -= cpu
        s["mem"] -= mem
        mask = 0
        if milli > 0 and gpu >= 0:
            s["gpus"][gpu] -= milli
            mask = 1 << gpu
        elif milli > 0:
            for i, g in enumerate(s["gpus"]):
                if want and g == 1000:
                    s["gpus"][i] = 0
                    mask |= 1 << i
                    want -= 1
        out.append((n, mask))
    return out


@settings(max_examples=60, deadline=None)
@given(case=clusters())
def test_fgd_matches_the_restated_reference(case: tuple[sharing.Nodes, sharing.Pods]) -> None:
    nodes, pods = case
    typical = sharing.typical_pods(pods)
    run = sharing.place(nodes, pods, "fgd", typical=typical, compiled=False)
    expected = restated_fgd(nodes, pods, typical)
    assert list(zip(run.node.tolist(), run.gpu_mask.tolist(), strict=True)) == expected


def test_the_cli_prints_the_placements_side_by_side(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from clustersim.cli import main

    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\na,16000,64000,2,T4\nb,16000,64000,1,T4\n")
    pods = tmp_path / "pods.csv"
    pods.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,1000,1,300\np2,1000,1000,1,500\n"
        "p3,1000,1000,2,500\n"
    )
    args = ["sharing", "--nodes", str(nodes), "--pods", str(pods), "--order", "arrival"]
    assert main([*args, "--placement", "all"]) == 0
    out = capsys.readouterr().out
    assert "share of more than one GPU 1" in out
    for name in sharing.PLACEMENTS:
        assert name in out
    assert main([*args, "--placement", "best-fit", "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert data["runs"][0]["placed"] == 2
    assert data["runs"][0]["allocated_share_final"] == pytest.approx(800 / 3000)
    assert main([*args, "--placement", "worst-fit"]) == 2
