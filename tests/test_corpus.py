"""Every corpus function's gradient against central finite differences."""
import pytest

from corpus import CASES
from fdcheck import check_grad


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gradient_matches_finite_differences(case):
    check_grad(case.fn, case.args, wrt=case.wrt, kwargs=case.kwargs)
