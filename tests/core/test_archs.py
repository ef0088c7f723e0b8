"""The architectures' specs (core/archs.py): what each one sends and keeps, by hand."""

import pytest

from shgcn.core.archs import ARCHS, MEAN, NORM, SUM, ArchSpec, arch_spec
from shgcn.core.errors import UserError

LINEAR = ("gcn", "sage", "gin")


@pytest.mark.parametrize("arch", LINEAR)
def test_a_narrowing_weight_goes_first_and_the_rows_travel_narrow(arch):
    spec = ARCHS[arch]
    # [8, 4, 2]: both layers narrow, so both multiply first: widths 4 then 2, forward and backward
    assert [spec.w_first([8, 4, 2], k) for k in (0, 1)] == [True, True]
    assert spec.exchanges([8, 4, 2], directed=False) == ([(4, False), (2, False)], [(4, False), (2, False)])
    assert spec.exchanges([8, 4, 2], directed=True) == ([(4, False), (2, False)], [(4, True), (2, True)])


@pytest.mark.parametrize("arch", LINEAR)
def test_a_widening_first_layer_aggregates_first_and_needs_no_backward_exchange(arch):
    spec = ARCHS[arch]
    # [2, 4, 3]: layer 0 widens (aggregates the 2 features first: no gradient for them), layer 1 narrows
    assert [spec.w_first([2, 4, 3], k) for k in (0, 1)] == [False, True]
    assert spec.exchanges([2, 4, 3], directed=True) == ([(2, False), (3, False)], [(3, True)])
    # a hidden layer that widens keeps its backward exchange at its input width
    assert spec.exchanges([8, 4, 6, 2], directed=False) == ([(4, False), (4, False), (2, False)],
                                                            [(4, False), (4, False), (2, False)])
    assert spec.w_first([4, 4], 0) is False  # equal widths: aggregate first


def test_attention_multiplies_first_and_folds_every_backward_exchange():
    gat = ARCHS["gat"]
    assert gat.w_first([2, 4, 3], 0) and gat.w_first([2, 4, 3], 1)
    # heads [2, 1] on [8, 4, 2]: Z = H W is 2 x 4 = 8 wide on layer 0, 1 x 2 on layer 1
    for directed in (False, True):
        assert gat.exchanges([8, 4, 2], directed, [2, 1]) == ([(8, False), (2, False)], [(8, True), (2, True)])
    assert gat.exchanges([2, 4, 3], False) == ([(4, False), (3, False)], [(4, True), (3, True)])  # one head each


def test_layer_heads():
    assert ARCHS["gat"].layer_heads(3, {"heads": 4, "out_heads": 2}) == [4, 4, 2]
    assert ARCHS["gat"].layer_heads(1, {"heads": 4, "out_heads": 2}) == [2]
    assert ARCHS["gat"].layer_heads(2) == [8, 1]  # the options' defaults (GATConv's examples: 8 heads, 1 out)
    for arch in LINEAR:
        assert ARCHS[arch].layer_heads(3, {"heads": 4, "out_heads": 2}) == [1, 1, 1]
    assert [a.multihead for a in ARCHS.values()] == [False, False, False, True]


def test_in_widths_concatenate_the_previous_layers_heads():
    assert ARCHS["gcn"].in_widths([8, 4, 2]) == [8, 4]
    assert ARCHS["gat"].in_widths([8, 4, 2], [2, 1]) == [8, 8]
    assert ARCHS["gat"].in_widths([8, 4, 3, 2], [3, 2, 1]) == [8, 12, 6]
    assert ARCHS["gat"].in_widths([5, 7]) == [5]


def test_the_registry():
    assert ARCHS.names() == ("gcn", "sage", "gin", "gat")
    assert [a.operator for a in ARCHS.values()] == [NORM, MEAN, SUM, NORM]
    assert [a.by_product for a in ARCHS.values()] == [True, True, True, False]
    gat = ARCHS["gat"]
    assert (gat.attends, gat.attention_bytes, gat.needs_halo_ids) == (True, 8, True)
    assert [o.flag for o in gat.options] == ["--heads", "--out-heads", "--attn-dropout"]
    assert all(a.options == () for a in ARCHS.values() if a is not gat)


def test_arch_spec_takes_a_name_or_a_spec_and_refuses_an_unknown_name():
    assert arch_spec("sage") is ARCHS["sage"]
    mine = ArchSpec("mine", "a test architecture")
    assert arch_spec(mine) is mine and mine.operator == NORM and not mine.attends
    with pytest.raises(UserError) as e:
        arch_spec("gnn")
    assert str(e.value) == "--arch 'gnn': choose from gcn, sage, gin, gat"


def test_multi_head_is_a_capability_not_an_option_name():
    from shgcn.core.archs import ArchSpec
    from shgcn.core.options import Option

    only = Option("--my-heads", 3, "heads of every hidden layer", type=int, low=1)
    spec = ArchSpec("mine", "heads only, no --out-heads", options=(only,), heads=only)
    assert spec.multihead and spec.layer_heads(3) == [3, 3, 1] and spec.layer_heads(3, {"my_heads": 2}) == [2, 2, 1]
    named = ArchSpec("named", "an option called heads, but one head", options=(Option("--heads", 4, "not heads"),))
    assert not named.multihead and named.layer_heads(2, {"heads": 4}) == [1, 1]


def test_replication_is_the_algorithms_to_say():
    from shgcn.core.algorithms import ALGORITHMS

    assert [ALGORITHMS[a].replication({"replication": 3}) for a in ("1d", "1.5d", "2d")] == [1, 3, 1]
    assert ALGORITHMS["1.5d"].replication({}) == 1
