"""p-values print one way on every page: four decimals, "< 0.0001" below that, a dash when there is none."""

from ecast.templatetags.numbers import pvalue


def test_p_values_print_with_four_decimals_and_a_floor():
    assert pvalue(0.111) == "0.1110" and pvalue(0.0003107) == "0.0003"
    assert pvalue(2.589e-05) == "< 0.0001" and pvalue(0.0) == "< 0.0001"
    assert pvalue(1.0) == "1.0000"


def test_a_missing_p_value_is_a_dash():
    assert pvalue(None) == "—" and pvalue(float("nan")) == "—"
