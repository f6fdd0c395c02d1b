"""``chainrule.bfloat16`` exists for code that names it (nanoGPT's table of dtypes), and
making a tensor of it raises TypeError naming it (NumPy has no bfloat16)."""

import pytest

import chainrule as cr


def test_bfloat16_can_be_named_compared_and_used_as_a_key():
    table = {"float32": cr.float32, "bfloat16": cr.bfloat16, "float16": cr.float16}
    assert table["float32"] is cr.float32
    assert cr.bfloat16 != cr.float32 and cr.bfloat16 == cr.bfloat16
    assert cr.bfloat16.is_floating_point and cr.bfloat16.itemsize == 2
    assert repr(cr.bfloat16) == "bfloat16"


@pytest.mark.parametrize("make", [
    lambda x: cr.zeros(2, dtype=cr.bfloat16),
    lambda x: cr.tensor([1.0], dtype=cr.bfloat16),
    lambda x: x.to(cr.bfloat16),
    lambda x: x.bfloat16(),
    lambda x: cr.ones_like(x, dtype=cr.bfloat16),
    lambda x: x.sum(dtype=cr.bfloat16),
    lambda x: cr.set_default_dtype(cr.bfloat16),
])
def test_making_a_bfloat16_tensor_raises_naming_it_and_changes_nothing(make):
    x = cr.ones(2, requires_grad=True)
    default = cr.get_default_dtype()
    with pytest.raises(TypeError, match="bfloat16 is not supported"):
        make(x)
    assert cr.get_default_dtype() is default and x.dtype == cr.float64 and x.grad is None
